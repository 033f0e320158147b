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
#        and 64 KiB values (about RXE_BENCH_MB MB of values each, default 60), each run
#        RXE_BENCH_REPEAT times (default 3), interleaved across transports and sizes: the
#        median is printed with every run (single runs of one configuration differ by up to
#        1.5x within one boot, see docs/benchmarks.md);
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
repeat="${RXE_BENCH_REPEAT:-3}"
guest="$build/rxe-bench-guest.sh"
cat >"$guest" <<GUEST
#!/bin/bash
set -u
gid=""
for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
  grep -q '0000:0000:0000:0000:0000:ffff:' "\$f" && { gid=\$(basename "\$f"); break; }
done
bw_of() { awk '/^ *65536/ {print \$4}' "\$1"; }
# The server may take more than a second to listen on a busy host: the client retries, and
# the server gives up after 120 s rather than hanging the run when no client ever connected.
perftest() { # tool log args...
  local tool=\$1 log=\$2
  shift 2
  timeout 120 \$tool "\$@" >\$tool-server.log 2>&1 &
  for try in 1 2 3 4 5; do
    sleep 1
    timeout 120 \$tool "\$@" 127.0.0.1 >\$log 2>&1 && break
  done
  wait
}
perftest ib_write_bw bw-client.log -d rxe0 -x "\$gid" -s 65536 -n 2000
for size in 64 1024; do
  perftest ib_write_lat lat-client-\$size.log -d rxe0 -x "\$gid" -s \$size -n 2000
done
$bench --benchmark_out=bench.json --benchmark_out_format=json
for t in verbs tcp; do
  for p in blocking busy; do
    $driver --transport \$t --followers 1 --value-size 1024 --records $lat_records --ack all \
            --outstanding 1 --polling \$p --quiet --json lat-\$t-\$p.json >lat-\$t-\$p.log 2>&1 ||
      { echo "rdmarepl-bench --outstanding 1 --polling \$p over \$t failed:"; cat lat-\$t-\$p.log; }
  done
done
# Throughput repeats interleave the transports and value sizes, so that a slow stretch of the
# emulated machine does not land on one configuration only.
for rep in \$(seq 1 $repeat); do
  for t in verbs tcp; do
    for v in 1024 16384 65536; do
      $driver --transport \$t --followers 1 --value-size \$v --records \$(( $mb * 1000000 / v )) \
              --ack all --batch-bytes 65536 --quiet --json repl-\$t-\$v-\$rep.json \
              >repl-\$t-\$v-\$rep.log 2>&1 ||
        { echo "rdmarepl-bench --value-size \$v over \$t failed:"; cat repl-\$t-\$v-\$rep.log; }
    done
  done
done
perf_bw=\$(bw_of bw-client.log)
perf_lat=\$(awk '/^ *64 / {print \$5}' lat-client-64.log)
perf_lat1k=\$(awk '/^ *1024 / {print \$5}' lat-client-1024.log)
echo "ib_write_bw 64 KiB: \${perf_bw} MB/s; ib_write_lat typical: 64 B \${perf_lat} us, 1 KiB \${perf_lat1k} us"
python3 - "\$perf_bw" "\$perf_lat" "\$perf_lat1k" $repeat <<'PY'
import json, sys
perf_bw, perf_lat, perf_lat1k = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
repeat = int(sys.argv[4])
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
        rs = [r for r in (load(f"repl-{t}-{v}-{i}.json") for i in range(1, repeat + 1)) if r]
        if not rs:
            print(f"replication over {t}, {v // 1024} KiB values: no result")
            continue
        mbs = sorted(r["mb_per_sec"] for r in rs)
        med = mbs[len(mbs) // 2] if len(mbs) % 2 else (mbs[len(mbs) // 2 - 1] + mbs[len(mbs) // 2]) / 2
        p50s = sorted(r["latency_us"]["p50"] for r in rs)
        print(f"replication over {t}, {v // 1024} KiB values (1 follower, 64 KiB batches, "
              f"ack=all, open loop, {rs[0]['records']} records, {len(rs)} of {repeat} runs, "
              f"verified {all(r['verified'] for r in rs)}): median {med:.2f} MB/s = "
              f"{med / perf_bw:.3f} x ib_write_bw (target >= 0.8); runs "
              f"{' '.join(f'{x:.1f}' for x in mbs)} MB/s = {mbs[0] / perf_bw:.2f}..{mbs[-1] / perf_bw:.2f} x; "
              f"open-loop replicate-to-ack p50 {p50s[len(p50s) // 2]:.0f} us")
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
