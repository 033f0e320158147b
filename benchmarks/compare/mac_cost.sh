#!/usr/bin/env bash
# The cost of batch authentication: rdmarepl-bench without a key, then the same run with
# --key-file (every batch and acknowledgement carries a Poly1305 tag), back to back, ROUNDS
# times, in one invocation. Prints each round's writes/s, CPU per write and the key / no-key
# ratio, then the median and range of the ratios (docs/benchmarks.md, "Batch
# authentication").
#
#   benchmarks/compare/mac_cost.sh BUILD_DIR [ROUNDS] [RECORDS] [VALUE_BYTES]
# Defaults: 5 rounds, 1m records, 1024-byte values; TCP, 2 followers.
set -euo pipefail
build=${1:?usage: mac_cost.sh BUILD_DIR [ROUNDS] [RECORDS] [VALUE_BYTES]}
rounds=${2:-5}
records=${3:-1m}
value=${4:-1024}
bench="$build/benchmarks/rdmarepl-bench"
[[ -x "$bench" ]] || { echo "mac_cost: no $bench; build the rdmarepl-bench target" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 32 /dev/urandom >"$tmp/key"
echo "mac_cost: $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | no key /s (CPU us) | key /s (CPU us) | ratio |"
echo "|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  common=(--transport tcp --followers 2 --value-size "$value" --records "$records" --quiet)
  "$bench" "${common[@]}" --json "$tmp/off.json" >/dev/null
  "$bench" "${common[@]}" --json "$tmp/on.json" --key-file "$tmp/key" >/dev/null
  /usr/bin/python3 - "$tmp/off.json" "$tmp/on.json" "$r" "$tmp/ratios" <<'PY'
import json, sys
off, on = (json.load(open(p)) for p in sys.argv[1:3])
for j in (off, on):
    if not j["verified"]:
        sys.exit("mac_cost: a run was not verified (followers differ from the leader)")
ratio = on["ops_per_sec"] / off["ops_per_sec"]
print(f"| {sys.argv[3]} | {off['ops_per_sec']:,.0f} ({off['cpu_us_per_op']:.2f}) | "
      f"{on['ops_per_sec']:,.0f} ({on['cpu_us_per_op']:.2f}) | {ratio:.3f} |")
open(sys.argv[4], "a").write(f"{ratio}\n")
PY
done
/usr/bin/python3 - "$tmp/ratios" <<'PY'
import statistics, sys
v = [float(x) for x in open(sys.argv[1])]
print(f"key / no key: median {statistics.median(v):.3f} (range {min(v):.3f}-{max(v):.3f}), "
      f"{len(v)} rounds")
PY
