# Warnings (as errors when RDMAREPL_WERROR), sanitizers and coverage, per target.
set(RDMAREPL_SAN_FLAGS "")
if(RDMAREPL_SANITIZE)
  set(RDMAREPL_SAN_FLAGS -fsanitize=${RDMAREPL_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options(${RDMAREPL_SAN_FLAGS})
  add_link_options(${RDMAREPL_SAN_FLAGS})
endif()
if(RDMAREPL_COVERAGE)
  # Atomic counter updates: the tests run several threads through the same code, and plain
  # increments can race into negative branch counts that gcovr refuses to parse.
  add_compile_options(--coverage -O0 -fprofile-update=atomic)
  add_link_options(--coverage)
endif()

function(rdmarepl_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                           -Wimplicit-fallthrough)
  if(RDMAREPL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
