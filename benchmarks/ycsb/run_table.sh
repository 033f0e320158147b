#!/usr/bin/env bash
# The loopback table of docs/benchmarks.md ("YCSB: reads served by replicas"): rdmarepl over
# TCP (rdmarepl-ycsb, workloads C and B, keys uniform as redis-benchmark's -r) against Redis 7
# replicas (redis_reads.sh, workload C only) at 1, 4 and 16 KiB, the same client threads with
# one request in flight each. Prints one markdown row per run, with the command that made it,
# and writes every JSON result to OUT_DIR.
#
# usage: benchmarks/ycsb/run_table.sh BUILD_DIR [OUT_DIR] [THREADS] [OPERATIONS] [RECORDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run_table.sh BUILD_DIR [OUT_DIR] [THREADS] [OPERATIONS] [RECORDS]}
out=${2:-ycsb-results}
threads=${3:-8}
ops=${4:-100000}
records=${5:-10000}
ycsb="$build/benchmarks/rdmarepl-ycsb"
mkdir -p "$out"
echo "| system | workload | value | ops/s | avg us | p50 us | p99 us | p999 us | CPU us/op | verified | command |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for size in 1024 4096 16384; do
  for w in C B; do
    cmd="rdmarepl-ycsb --workload $w --distribution uniform --value $size --threads $threads --operationcount $ops --recordcount $records --transport tcp"
    "$ycsb" --workload "$w" --distribution uniform --value "$size" --threads "$threads" \
      --operationcount "$ops" --recordcount "$records" --transport tcp \
      --json "$out/rdmarepl-$w-$size.json" >/dev/null
    python3 - "$out/rdmarepl-$w-$size.json" "$cmd" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))[0]; r = j["ops"]["READ"]
print(f"| rdmarepl tcp | {j['workload']} | {j['value_bytes']} | {j['throughput_ops']:.0f} | "
      f"{r['avg_us']:.0f} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | {r['p999_us']:.0f} | "
      f"{j['cpu_us_per_op']:.1f} | {str(j['verified']).lower()} | `{sys.argv[2]}` |")
PY
  done
  cmd="benchmarks/ycsb/redis_reads.sh $size $threads $ops $records"
  "$here/redis_reads.sh" "$size" "$threads" "$ops" "$records" >"$out/redis-C-$size.json"
  python3 - "$out/redis-C-$size.json" "$cmd" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"| redis 7 replicas | C | {j['value_bytes']} | {j['throughput_ops']:.0f} | "
      f"{j['avg_us']:.0f} | {j['p50_us']:.0f} | {j['p99_us']:.0f} | - | - | - | `{sys.argv[2]}` |")
PY
done
