# The libFuzzer targets. Each names the fuzz source and the library layers (src/<layer>/
# sources.cmake) it needs; run.sh builds them with clang and runs one for a bounded time.
#
# To add a target (e.g. the replication batch decoder or the handshake parser):
#   1. write tests/fuzz/<name>_fuzz.cc defining LLVMFuzzerTestOneInput;
#   2. add a rdmarepl_fuzz_target(NAME <name> LAYERS core <layer>...) line below;
#   3. commit a few small valid inputs under tests/fuzz/corpus/<name>/;
#   4. add <name> to RDMAREPL_FUZZ_TARGETS in tests/fuzz/CMakeLists.txt (one ctest each).
# A target whose layer as a whole does not build here names the single files it needs with
# SOURCES (paths from the repository root); src/ is on its include path for private headers.
# The frame reader walks each frame's payload as the replication batch it holds in the
# product, so it also compiles the batch parser.
rdmarepl_fuzz_target(NAME wal_frame_reader LAYERS core wal
  SOURCES src/replication/batch_format.cc)
rdmarepl_fuzz_target(NAME replication_batch LAYERS core
  SOURCES src/replication/batch_format.cc)
rdmarepl_fuzz_target(NAME handshake LAYERS core
  SOURCES src/transport/bootstrap/hello.cc src/replication/hello.cc)
rdmarepl_fuzz_target(NAME checkpoint_chunk LAYERS core
  SOURCES src/replication/checkpoint_ship.cc)
rdmarepl_fuzz_target(NAME read_request LAYERS core
  SOURCES src/reads/read_format.cc)
# The tag check of every authenticated replication write (batches, checkpoint chunks,
# acknowledgements and checkpoint replies); LIBS: libraries linked as they are.
rdmarepl_fuzz_target(NAME write_mac LAYERS core
  SOURCES src/replication/write_mac.cc LIBS PkgConfig::SODIUM)

# Writes the seeds of replication_batch, handshake and checkpoint_chunk with the real encoders (not a fuzz
# target): cmake --build <fuzz build> --target make_seeds && <fuzz build>/make_seeds
# tests/fuzz/corpus
add_executable(make_seeds ${RDMAREPL_ROOT}/tests/fuzz/make_seeds.cc
  ${RDMAREPL_ROOT}/src/replication/batch_format.cc ${RDMAREPL_ROOT}/src/transport/bootstrap/hello.cc
  ${RDMAREPL_ROOT}/src/replication/hello.cc ${RDMAREPL_ROOT}/src/replication/checkpoint_ship.cc
  ${RDMAREPL_ROOT}/src/reads/read_format.cc)
target_include_directories(make_seeds PRIVATE ${RDMAREPL_ROOT}/src)
rdmarepl_fuzz_layers_lib(make_seeds_lib core)
target_link_libraries(make_seeds PRIVATE ${make_seeds_lib})
target_link_options(make_seeds PRIVATE -fsanitize=address,undefined)
