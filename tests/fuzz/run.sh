#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in a separate build directory and
# runs one target for a bounded time against its committed seed corpus.
#
#   tests/fuzz/run.sh <target> [seconds]        e.g. tests/fuzz/run.sh wal_frame_reader 60
#
# Environment: RDMAREPL_FUZZ_BUILD_DIR (default build-fuzz at the repository root),
# RDMAREPL_FUZZ_SECONDS (default 20), CXX_FUZZ (default clang++-14, then clang++).
# New inputs found during the run go to a scratch corpus in the build directory; the
# committed seeds under tests/fuzz/corpus/<target>/ are only read. A crash leaves its
# reproducer as <build>/crash-* and fails the run; replay it with <build>/<target> <file>.
# Exit status 77 means "skipped" (no clang with libFuzzer); ctest reports it as skipped.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${1:?usage: tests/fuzz/run.sh <target> [seconds]}
SECONDS_TO_RUN=${2:-${RDMAREPL_FUZZ_SECONDS:-20}}
BUILD=${RDMAREPL_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}

CXX_FUZZ=${CXX_FUZZ:-}
if [[ -z "$CXX_FUZZ" ]]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null; then CXX_FUZZ=$c; break; fi
  done
fi
if [[ -z "$CXX_FUZZ" ]]; then
  echo "fuzz: skipped: no clang++ found; install clang-14 and libclang-rt-14-dev (scripts/setup does)"
  exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}' |
     "$CXX_FUZZ" -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; then
  echo "fuzz: skipped: $CXX_FUZZ cannot link -fsanitize=fuzzer; install libclang-rt-14-dev"
  exit 77
fi

mkdir -p "$BUILD"
# Several fuzz tests may start at once under ctest -j: one configures and builds at a time.
exec 9>"$BUILD/.lock"
flock 9
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$HERE/project" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER="$CXX_FUZZ" >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log"; exit 1; }
fi
cmake --build "$BUILD" --target "$TARGET" -j "${JOBS:-2}" >"$BUILD/build-$TARGET.log" 2>&1 ||
  { tail -n 60 "$BUILD/build-$TARGET.log"; exit 1; }
flock -u 9

SEEDS="$HERE/corpus/$TARGET"
WORK="$BUILD/corpus-$TARGET"
mkdir -p "$WORK" "$SEEDS"
echo "fuzz: $TARGET for ${SECONDS_TO_RUN}s (seeds: $SEEDS)"
cd "$BUILD"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# -rss_limit_mb: the reader loads at most one frame's worth, far below this.
"./$TARGET" "$WORK" "$SEEDS" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 2>&1 | tail -n 25
exit "${PIPESTATUS[0]}"
