#!/usr/bin/env bash
# The loopback table of docs/benchmarks.md ("YCSB: reads served by replicas"): rdmarepl over
# TCP (rdmarepl-ycsb, keys uniform as redis-benchmark's -r) against Redis 7 replicas
# (redis_reads.sh, workload C only: redis-benchmark cannot mix GETs on the replicas with SETs
# on the master) at 1, 4 and 16 KiB, with the same client threads and the same requests in
# flight (IN_FLIGHT, 8 by default):
#   redis 7:             2 redis-benchmark processes (one per replica), each an event loop
#                        over IN_FLIGHT/2 connections with one GET in flight each (-P 1);
#   rdmarepl event-loop: 2 client threads, each an event loop over a ReadClient of its own
#                        with IN_FLIGHT/2 get_async() in flight (--inflight);
#   rdmarepl blocking:   IN_FLIGHT client threads sharing one ReadClient, one blocking get()
#                        each;
#   redis 7 pipelined:   for reference, the same GETs in flight pipelined on one connection
#                        per replica (-P IN_FLIGHT/2).
# rdmarepl runs workloads C and B. The variants run interleaved,
# ROUNDS times; every run is a row with the command that made it (RESULTS_DIR/rows.md), and
# the summary gives the medians and ranges per variant.
#
# usage: benchmarks/ycsb/run_table.sh BUILD_DIR [RESULTS_DIR] [ROUNDS] [OPERATIONS] [RECORDS]
#        [IN_FLIGHT] [SIZES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: run_table.sh BUILD_DIR [RESULTS_DIR] [ROUNDS] [OPERATIONS] [RECORDS] [IN_FLIGHT] [SIZES]"
build=${1:?$usage}
out=${2:-ycsb-results}
rounds=${3:-3}
ops=${4:-100000}
records=${5:-10000}
inflight=${6:-8}
sizes=${7:-1024 4096 16384}
(( inflight >= 2 && inflight % 2 == 0 )) || { echo "run_table.sh: IN_FLIGHT must be even and >= 2" >&2; exit 2; }
per_loop=$((inflight / 2))
ycsb="$build/benchmarks/rdmarepl-ycsb"
[[ -x "$ycsb" ]] || { echo "run_table.sh: no $ycsb" >&2; exit 2; }
mkdir -p "$out"
: >"$out/rows.md"
echo "run_table.sh: $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"

rdmarepl_row() {  # rdmarepl_row ROUND SIZE WORKLOAD SHAPE THREADS INFLIGHT_PER_THREAD
  local r=$1 size=$2 w=$3 shape=$4 threads=$5 per=$6
  local args=(--workload "$w" --distribution uniform --value "$size" --threads "$threads"
    --inflight "$per" --operationcount "$ops" --recordcount "$records" --transport tcp)
  local json="$out/rdmarepl-$shape-$w-$size-$r.json"
  "$ycsb" "${args[@]}" --json "$json" >/dev/null 2>"$out/last.log"
  python3 - "$json" "rdmarepl $shape" "$r" "rdmarepl-ycsb ${args[*]}" >>"$out/rows.md" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))[0]; r = j["ops"]["READ"]
if not j["verified"]:
    sys.exit("run_table.sh: a run read a value the leader did not write")
print(f"| {sys.argv[2]} | {j['workload']} | {j['value_bytes']} | {sys.argv[3]} | "
      f"{j['throughput_ops']:.0f} | {r['avg_us']:.0f} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | "
      f"{r['p999_us']:.0f} | {j['cpu_us_per_op']:.1f} | `{sys.argv[4]}` |")
PY
}

redis_row() {  # redis_row ROUND SIZE SHAPE CONNECTIONS PIPELINE
  local r=$1 size=$2 shape=$3 conns=$4 pipe=$5
  local json="$out/redis${shape:+-$shape}-C-$size-$r.json"
  "$here/redis_reads.sh" "$size" "$conns" "$ops" "$records" "$pipe" >"$json"
  python3 - "$json" "redis 7${shape:+ $shape}" "$r" "benchmarks/ycsb/redis_reads.sh $size $conns $ops $records $pipe" >>"$out/rows.md" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | C | {j['value_bytes']} | {sys.argv[3]} | {j['throughput_ops']:.0f} | "
      f"{j['avg_us']:.0f} | {j['p50_us']:.0f} | {j['p99_us']:.0f} | - | {j['cpu_us_per_op']:.1f} | "
      f"`{sys.argv[4]}` |")
PY
}

for r in $(seq 1 "$rounds"); do
  for size in $sizes; do
    rdmarepl_row "$r" "$size" C blocking "$inflight" 1
    rdmarepl_row "$r" "$size" C event-loop 2 "$per_loop"
    redis_row "$r" "$size" "" "$inflight" 1
    redis_row "$r" "$size" pipelined 2 "$per_loop"
    rdmarepl_row "$r" "$size" B blocking "$inflight" 1
    rdmarepl_row "$r" "$size" B event-loop 2 "$per_loop"
  done
done
echo "| system | workload | value | round | ops/s | avg us | p50 us | p99 us | p999 us | CPU us/op | command |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
cat "$out/rows.md"
echo
python3 - "$out/rows.md" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    rows[(c[0], c[1], int(c[2]))].append((float(c[4]), float(c[7]), float(c[9])))
def med(v):
    return f"{statistics.median(v):,.0f} [{min(v):,.0f}-{max(v):,.0f}]"
print("| system | workload | value | ops/s median [range] | p99 us median [range] | CPU us/op median |")
print("|---|---|---|---|---|---|")
for (name, w, size), v in sorted(rows.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
    print(f"| {name} | {w} | {size} | {med([x[0] for x in v])} | {med([x[1] for x in v])} | "
          f"{statistics.median([x[2] for x in v]):.1f} |")
PY
