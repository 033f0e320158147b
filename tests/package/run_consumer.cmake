# cmake -P script: install, then configure, build and run each project against the install:
# the consumer, and examples/embed_minimal, whose leader must replicate every write to its
# follower through the installed library.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
# Runs a command; fails the test unless it exits with 0. Its stdout goes to `out_var`.
function(run out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
# Configures and builds the project in `source_dir` against the install, in WORK_DIR/`name`.
function(build_against_install name source_dir)
  run(ignored ${CMAKE_COMMAND} -S ${source_dir} -B ${WORK_DIR}/${name} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
  run(ignored ${CMAKE_COMMAND} --build ${WORK_DIR}/${name})
endfunction()

run(ignored ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(ENV{LD_LIBRARY_PATH} "${prefix}/lib:${prefix}/lib64:$ENV{LD_LIBRARY_PATH}")

build_against_install(consumer ${CONSUMER_DIR})
run(ignored ${WORK_DIR}/consumer/consumer)

build_against_install(embed_minimal ${EMBED_DIR})
# With a shared library, the binary must load the installed one, not the build tree's.
file(GLOB installed_shared ${prefix}/lib*/librdmarepl.so*)
if(installed_shared)
  run(deps ldd ${WORK_DIR}/embed_minimal/embed_minimal)
  if(NOT deps MATCHES "${prefix}/lib[^ ]*/librdmarepl")
    message(FATAL_ERROR "embed_minimal does not load librdmarepl from ${prefix}:\n${deps}")
  endif()
endif()
run(out ${WORK_DIR}/embed_minimal/embed_minimal)
if(NOT out MATCHES "the follower holds 1000 keys, identical to the leader's")
  message(FATAL_ERROR "embed_minimal ran but did not report 1000 replicated keys identical to "
                      "the leader's; it printed:\n${out}")
endif()

# The operations check-list ships with the package and runs from the install.
if(NOT EXISTS ${prefix}/bin/rdmarepl-doctor)
  message(FATAL_ERROR "rdmarepl-doctor was not installed to ${prefix}/bin")
endif()
run(doctor_help ${prefix}/bin/rdmarepl-doctor --help)
if(NOT doctor_help MATCHES "PASS / WARN / FAIL")
  message(FATAL_ERROR "the installed rdmarepl-doctor --help printed:\n${doctor_help}")
endif()
