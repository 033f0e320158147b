#!/usr/bin/env bash
# Boots one Soft-RoCE VM and measures, in that boot:
#   1. perftest: ib_write_bw at 64 KiB, ib_write_lat at 64 B and 1 KiB, over rxe0;
#   2. the verbs transport alone (rdmarepl-bench-verbs): streaming bandwidth, write latency;
#   3. replication (rdmarepl-bench: leader + 1 follower, ack=all) over verbs, then the same
#      over TCP (loopback) in the same boot:
#      - latency: 1 KiB values, closed loop (--outstanding 1: one write at a time, the next
#        issued when the previous is committed; the leader's wait() sends the lone record's
#        batch at once, so flush_delay does not add to it), with the follower polling
#        blocking (the bench default) and busy (as perftest does);
#      - throughput: open loop (writes back to back) with 64 KiB batches, at 1 KiB, 16 KiB
#        and 64 KiB values (about RXE_BENCH_MB MB of values each, default 60);
# then prints the ratios: replication throughput / ib_write_bw (64 KiB), per value size, and
# the closed-loop replicate-to-ack p50 / ib_write_lat typical (1 KiB) and / 2 x typical
# (ib_write_lat's typical is half a round trip; replicate-to-ack is a whole one plus apply).
#   benchmarks/rxe/run.sh BUILD_DIR [run-in-vm options]
set -euo pipefail
build="$(realpath "$1")"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="$build/benchmarks/rxe/rdmarepl-bench-verbs"
[[ -x "$bench" ]] || { echo "build $bench first"; exit 1; }
driver="$build/benchmarks/rdmarepl-bench"
[[ -x "$driver" ]] || { echo "build $driver first"; exit 1; }
mb="${RXE_BENCH_MB:-60}"
lat_records="${RXE_BENCH_LAT_RECORDS:-5000}"
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
for size in 64 1024; do
  ib_write_lat -d rxe0 -x "\$gid" -s \$size -n 2000 >lat-server.log 2>&1 &
  sleep 1
  ib_write_lat -d rxe0 -x "\$gid" -s \$size -n 2000 127.0.0.1 >lat-client-\$size.log 2>&1
  wait
done
$bench --benchmark_out=bench.json --benchmark_out_format=json
for t in verbs tcp; do
  for p in blocking busy; do
    $driver --transport \$t --followers 1 --value-size 1024 --records $lat_records --ack all \
            --outstanding 1 --polling \$p --quiet --json lat-\$t-\$p.json >lat-\$t-\$p.log 2>&1 ||
      { echo "rdmarepl-bench --outstanding 1 --polling \$p over \$t failed:"; cat lat-\$t-\$p.log; }
  done
  for v in 1024 16384 65536; do
    $driver --transport \$t --followers 1 --value-size \$v --records \$(( $mb * 1000000 / v )) \
            --ack all --batch-bytes 65536 --quiet --json repl-\$t-\$v.json >repl-\$t-\$v.log 2>&1 ||
      { echo "rdmarepl-bench --value-size \$v over \$t failed:"; cat repl-\$t-\$v.log; }
  done
done
perf_bw=\$(bw_of bw-client.log)
perf_lat=\$(awk '/^ *64 / {print \$5}' lat-client-64.log)
perf_lat1k=\$(awk '/^ *1024 / {print \$5}' lat-client-1024.log)
echo "ib_write_bw 64 KiB: \${perf_bw} MB/s; ib_write_lat typical: 64 B \${perf_lat} us, 1 KiB \${perf_lat1k} us"
python3 - "\$perf_bw" "\$perf_lat" "\$perf_lat1k" <<'PY'
import json, sys
perf_bw, perf_lat, perf_lat1k = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
runs = json.load(open("bench.json"))["benchmarks"]
def get(prefix):
    return next(x for x in runs if x["name"].startswith(prefix + "/"))
bw = get("BM_VerbsWriteBandwidth/65536")["bytes_per_second"] / 1e6
bw4 = get("BM_VerbsWriteBandwidth/4096")["bytes_per_second"] / 1e6
lat = get("BM_VerbsWriteLatency/64")["real_time"] / 1000.0
print(f"verbs transport 64 KiB: {bw:.1f} MB/s = {bw / perf_bw:.2f} x ib_write_bw")
print(f"verbs transport 4 KiB: {bw4:.1f} MB/s = {bw4 / perf_bw:.2f} x ib_write_bw (64 KiB)")
print(f"verbs transport 64 B write + both completions: {lat:.1f} us = {lat / perf_lat:.2f} x ib_write_lat typical")
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
for t in ("verbs", "tcp"):
    for v in (1024, 16384, 65536):
        r = load(f"repl-{t}-{v}.json")
        if r is None:
            print(f"replication over {t}, {v // 1024} KiB values: no result")
            continue
        print(f"replication over {t}, {v // 1024} KiB values (1 follower, 64 KiB batches, "
              f"ack=all, open loop, {r['records']} records, verified {r['verified']}): "
              f"{r['mb_per_sec']:.2f} MB/s = {r['mb_per_sec'] / perf_bw:.3f} x ib_write_bw "
              f"(target >= 0.8); cpu {r['cpu_us_per_op']:.1f} us/record; open-loop "
              f"replicate-to-ack p50 {r['latency_us']['p50']:.0f} us")
for t, p in (("verbs", "blocking"), ("verbs", "busy"), ("tcp", "blocking"), ("tcp", "busy")):
    r = load(f"lat-{t}-{p}.json")
    if r is None:
        print(f"closed-loop latency over {t}, {p} follower polling: no result")
        continue
    p50 = r["latency_us"]["p50"]
    print(f"replicate-to-ack over {t}, closed loop, {p} follower polling (1 KiB values, 1 follower, ack=all, "
          f"{r['records']} records, verified {r['verified']}): p50 {p50:.1f} us, p99 "
          f"{r['latency_us']['p99']:.1f} us; p50 = {p50 / perf_lat1k:.2f} x ib_write_lat 1 KiB "
          f"typical (target <= 1.5), = {p50 / (2 * perf_lat1k):.2f} x 2 x typical (a round trip)")
PY
GUEST
"$here/../../tests/rxe/run-in-vm.sh" --quiet-boot --timeout 900 "$@" --script "$guest"
