#!/usr/bin/env bash
# Boots one Soft-RoCE VM and measures, in that boot: perftest's ib_write_bw (64 KiB) and
# ib_write_lat (64 B) over rxe0, then the verbs transport's streaming bandwidth and write
# latency (rdmarepl-bench-verbs), and prints the ratios.
#   benchmarks/rxe/run.sh BUILD_DIR [run-in-vm options]
set -euo pipefail
build="$(realpath "$1")"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="$build/benchmarks/rxe/rdmarepl-bench-verbs"
[[ -x "$bench" ]] || { echo "build $bench first"; exit 1; }
guest="$build/rxe-bench-guest.sh"
cat >"$guest" <<GUEST
#!/bin/bash
set -u
gid=""
for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
  grep -q '0000:0000:0000:0000:0000:ffff:' "\$f" && { gid=\$(basename "\$f"); break; }
done
bw_of() { awk '/^ *65536/ {print \$4}' "\$1"; }
ib_write_bw -d rxe0 -x "\$gid" -s 65536 -n 2000 >bw-server.log 2>&1 &
sleep 1
ib_write_bw -d rxe0 -x "\$gid" -s 65536 -n 2000 127.0.0.1 >bw-client.log 2>&1
wait
ib_write_lat -d rxe0 -x "\$gid" -s 64 -n 2000 >lat-server.log 2>&1 &
sleep 1
ib_write_lat -d rxe0 -x "\$gid" -s 64 -n 2000 127.0.0.1 >lat-client.log 2>&1
wait
$bench --benchmark_out=bench.json --benchmark_out_format=json
perf_bw=\$(bw_of bw-client.log)
perf_lat=\$(awk '/^ *64 / {print \$5}' lat-client.log)
echo "ib_write_bw 64 KiB: \${perf_bw} MB/s; ib_write_lat 64 B typical: \${perf_lat} us"
python3 - "\$perf_bw" "\$perf_lat" <<'PY'
import json, sys
perf_bw, perf_lat = float(sys.argv[1]), float(sys.argv[2])
runs = json.load(open("bench.json"))["benchmarks"]
def get(prefix):
    return next(x for x in runs if x["name"].startswith(prefix + "/"))
bw = get("BM_VerbsWriteBandwidth/65536")["bytes_per_second"] / 1e6
bw4 = get("BM_VerbsWriteBandwidth/4096")["bytes_per_second"] / 1e6
lat = get("BM_VerbsWriteLatency/64")["real_time"] / 1000.0
print(f"verbs transport 64 KiB: {bw:.1f} MB/s = {bw / perf_bw:.2f} x ib_write_bw")
print(f"verbs transport 4 KiB: {bw4:.1f} MB/s = {bw4 / perf_bw:.2f} x ib_write_bw (64 KiB)")
print(f"verbs transport 64 B write + both completions: {lat:.1f} us = {lat / perf_lat:.2f} x ib_write_lat typical")
PY
GUEST
"$here/../../tests/rxe/run-in-vm.sh" --quiet-boot --timeout 600 "$@" --script "$guest"
