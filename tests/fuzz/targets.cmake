# The libFuzzer targets. Each names the fuzz source and the library layers (src/<layer>/
# sources.cmake) it needs; run.sh builds them with clang and runs one for a bounded time.
#
# To add a target (e.g. the replication batch decoder or the handshake parser):
#   1. write tests/fuzz/<name>_fuzz.cc defining LLVMFuzzerTestOneInput;
#   2. add a rdmarepl_fuzz_target(NAME <name> LAYERS core <layer>...) line below;
#   3. commit a few small valid inputs under tests/fuzz/corpus/<name>/;
#   4. add <name> to RDMAREPL_FUZZ_TARGETS in tests/fuzz/CMakeLists.txt (one ctest each).
rdmarepl_fuzz_target(NAME wal_frame_reader LAYERS core wal)
rdmarepl_fuzz_target(NAME wal_record LAYERS core wal)
