#!/usr/bin/env bash
# Line coverage of the verbs transport under its VM tests.
#   coverage.sh BUILD_DIR MIN_PERCENT [run-in-vm options...]
# BUILD_DIR must be configured with -DRDMAREPL_COVERAGE=ON. The build directory is shared
# writable with the guest, so the instrumented binaries write their .gcda files straight into
# it; afterwards gcovr (or gcov) summarises src/transport/verbs on the host. Fails when the
# tests fail or line coverage is below MIN_PERCENT.
set -euo pipefail
build="$(realpath "$1")"
min="$2"
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../.." && pwd)"

find "$build" -name '*.gcda' -delete
tests=("$build/tests/transport/verbs/verbs_tests --use-colour no"
       "$build/tests/transport/verbs/verbs_tests --use-colour no [.linkdown]")
if [[ -x "$build/tests/transport/verbs/transport_conformance_verbs" ]]; then
  # Without the wrong-lkey case (rxe reports another status; see tests/rxe/CMakeLists.txt).
  tests=("$build/tests/transport/verbs/transport_conformance_verbs --use-colour no '~conformance: a wrong lkey completes with a local protection error'"
         "${tests[@]}")
fi
# The device-free tests run here on the host too: where there is no RDMA they take the
# no-device paths (probe, open, transport=verbs) that the VM cannot reach.
if [[ -x "$build/tests/transport/verbs/verbs_host_tests" ]]; then
  "$build/tests/transport/verbs/verbs_host_tests" --use-colour no
  tests=("$build/tests/transport/verbs/verbs_host_tests --use-colour no" "${tests[@]}")
fi
script="$build/rxe-coverage-guest.sh"
{
  echo "#!/bin/bash"
  echo "rc=0"
  for t in "${tests[@]}"; do echo "$t || rc=1"; done
  echo "exit \$rc"
} >"$script"
"$here/run-in-vm.sh" --rw "$build" "$@" --script "$script"

cd "$build"
pct=""
if command -v gcovr >/dev/null; then
  out="$(gcovr --root "$src" --filter "$src/src/transport/verbs/" --object-directory "$build" \
               --gcov-ignore-parse-errors --txt - 2>/dev/null || true)"
  echo "$out"
  pct="$(awk '/^TOTAL/ {gsub("%", "", $4); print $4}' <<<"$out")"
  [[ -n "$pct" ]] || echo "gcovr gave no summary (it cannot merge every unity-build object); using gcov"
fi
if [[ -z "$pct" ]]; then
  # gcov alone: sum the "Lines executed" of every verbs source (a unity build's objects
  # hold several sources each, so every object of the library is read).
  mapfile -t objs < <(find "$build/CMakeFiles/rdmarepl.dir" -name '*.gcda')
  out="$(gcov -n "${objs[@]}" 2>/dev/null | grep -A1 "src/transport/verbs/.*\.cc'" || true)"
  echo "$out"
  pct="$(awk -F'[:% ]+' '/Lines executed/ {c += $3 * $5 / 100; t += $5}
                          END {if (t) printf "%.1f", 100 * c / t; else print 0}' <<<"$out")"
fi
echo "verbs line coverage: ${pct}% (minimum ${min}%)"
awk -v p="$pct" -v m="$min" 'BEGIN {exit !(p + 0 >= m + 0)}' ||
  { echo "coverage below ${min}%"; exit 1; }
