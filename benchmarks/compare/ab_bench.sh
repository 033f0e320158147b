#!/usr/bin/env bash
# Two builds against each other: rdmarepl-bench of OLD_BUILD, then of NEW_BUILD, at 1 KiB and
# 16 KiB values, ROUNDS rounds, the variants interleaved so that both sides of each ratio ran
# seconds apart. Prints each run and the median and range of the new / old ratios per size.
#
#   benchmarks/compare/ab_bench.sh OLD_BUILD NEW_BUILD [ROUNDS] [EXTRA rdmarepl-bench ARGS...]
# Defaults: 3 rounds; TCP, 2 followers; 1m records at 1 KiB, 100k at 16 KiB.
set -euo pipefail
old=${1:?usage: ab_bench.sh OLD_BUILD NEW_BUILD [ROUNDS] [EXTRA ARGS...]}
new=${2:?usage: ab_bench.sh OLD_BUILD NEW_BUILD [ROUNDS] [EXTRA ARGS...]}
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
for b in "$old" "$new"; do
  [[ -x "$b/benchmarks/rdmarepl-bench" ]] || { echo "ab_bench: no $b/benchmarks/rdmarepl-bench" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "ab_bench: $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | value | old /s (CPU us) | new /s (CPU us) | ratio |"
echo "|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for size in 1024 16384; do
    recs=1m; [[ $size == 16384 ]] && recs=100k
    for side in old new; do
      dir=$old; [[ $side == new ]] && dir=$new
      "$dir/benchmarks/rdmarepl-bench" --transport tcp --followers 2 --value-size "$size" \
        --records "$recs" --quiet --json "$tmp/$side.json" "$@" >/dev/null
    done
    /usr/bin/python3 - "$tmp/old.json" "$tmp/new.json" "$r" "$size" "$tmp/ratios-$size" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
for j in (old, new):
    if not j["verified"]:
        sys.exit("ab_bench: a run was not verified (followers differ from the leader)")
ratio = new["ops_per_sec"] / old["ops_per_sec"]
print(f"| {sys.argv[3]} | {sys.argv[4]} | {old['ops_per_sec']:,.0f} ({old['cpu_us_per_op']:.2f}) | "
      f"{new['ops_per_sec']:,.0f} ({new['cpu_us_per_op']:.2f}) | {ratio:.3f} |")
open(sys.argv[5], "a").write(f"{ratio}\n")
PY
  done
done
for size in 1024 16384; do
  /usr/bin/python3 - "$tmp/ratios-$size" "$size" <<'PY'
import statistics, sys
v = [float(x) for x in open(sys.argv[1])]
print(f"{sys.argv[2]} bytes: new / old median {statistics.median(v):.3f} "
      f"(range {min(v):.3f}-{max(v):.3f}), {len(v)} rounds")
PY
done
