#!/usr/bin/env bash
# Replica reads of two builds and of Redis 7 replicas, interleaved: per round rdmarepl-ycsb
# workload C of OLD_BUILD, then of NEW_BUILD, then benchmarks/ycsb/redis_reads.sh with the
# same value size, threads, operations and keyspace. Prints every run and the medians and
# ranges per system (docs/benchmarks.md, "YCSB: reads served by replicas"). Pass the same
# directory twice to compare one build with Redis.
#
#   benchmarks/compare/ab_reads.sh OLD_BUILD NEW_BUILD [ROUNDS] [VALUE_BYTES] [THREADS]
# Defaults: 3 rounds, 1024-byte values, 8 threads; 40,000 reads over 10,000 keys, uniform.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=${1:?usage: ab_reads.sh OLD_BUILD NEW_BUILD [ROUNDS] [VALUE_BYTES] [THREADS]}
new=${2:?usage: ab_reads.sh OLD_BUILD NEW_BUILD [ROUNDS] [VALUE_BYTES] [THREADS]}
rounds=${3:-3}
value=${4:-1024}
threads=${5:-8}
ops=40000
records=10000
for b in "$old" "$new"; do
  [[ -x "$b/benchmarks/rdmarepl-ycsb" ]] || { echo "ab_reads: no $b/benchmarks/rdmarepl-ycsb" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "ab_reads: $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| system | round | reads/s | p50 us | p99 us | CPU us/read |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for side in old new; do
    dir=$old; [[ $side == new ]] && dir=$new
    "$dir/benchmarks/rdmarepl-ycsb" --workload C --distribution uniform --value "$value" \
      --threads "$threads" --operationcount "$ops" --recordcount "$records" --transport tcp \
      --json "$tmp/$side.json" >/dev/null
    /usr/bin/python3 - "$tmp/$side.json" "$side" "$r" "$tmp/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))[0]; rd = j["ops"]["READ"]
if not j["verified"]:
    sys.exit("ab_reads: a run read a value the leader did not write")
print(f"| rdmarepl {sys.argv[2]} | {sys.argv[3]} | {j['throughput_ops']:,.0f} | {rd['p50_us']:.0f} | "
      f"{rd['p99_us']:.0f} | {j['cpu_us_per_op']:.1f} |")
open(sys.argv[4], "a").write(f"rdmarepl {sys.argv[2]} {j['throughput_ops']} {rd['p99_us']}\n")
PY
  done
  "$here/../ycsb/redis_reads.sh" "$value" "$threads" "$ops" "$records" >"$tmp/redis.json"
  /usr/bin/python3 - "$tmp/redis.json" "$r" "$tmp/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"| redis replicas | {sys.argv[2]} | {j['throughput_ops']:,.0f} | {j['p50_us']:.0f} | "
      f"{j['p99_us']:.0f} | {j['cpu_us_per_op']:.1f} |")
open(sys.argv[3], "a").write(f"redis replicas {j['throughput_ops']} {j['p99_us']}\n")
PY
done
/usr/bin/python3 - "$tmp/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    a, b, ops, p99 = line.split()
    rows[f"{a} {b}"].append((float(ops), float(p99)))
for name, v in rows.items():
    ops = [x[0] for x in v]; p99 = [x[1] for x in v]
    print(f"{name}: reads/s median {statistics.median(ops):,.0f} ({min(ops):,.0f}-{max(ops):,.0f}), "
          f"p99 median {statistics.median(p99):.0f} us ({min(p99):.0f}-{max(p99):.0f})")
PY
