#!/usr/bin/env bash
# Redis 7 baseline for YCSB workload C: one master and two replicas on loopback (persistence
# off), RECORDS keys of VALUE bytes loaded on the master with redis-benchmark SETs, then
# redis-benchmark GETs against both replicas at once, THREADS connections in all (half per
# replica), one request in flight per connection (no pipelining, as rdmarepl-ycsb's client
# threads), keys uniform over the keyspace. With PIPELINE > 1 each connection keeps that many
# GETs in flight (redis-benchmark -P; its latencies are then per pipelined batch). Prints one
# JSON object:
#   {"system":"redis","value_bytes":..,"throughput_ops":..,"avg_us":..,"p50_us":..,"p99_us":..,
#    "cpu_seconds":..,"cpu_us_per_op":..}
# CPU: both replicas' and both redis-benchmark processes' user + system time during the gets
# (the master is idle then), as rdmarepl-ycsb counts every thread of its one process.
#
# usage: redis_reads.sh VALUE_BYTES THREADS OPERATIONS RECORDS [PIPELINE]
# Exit status 77 when redis-server or redis-benchmark is missing.
set -euo pipefail
value=${1:?usage: redis_reads.sh VALUE_BYTES THREADS OPERATIONS RECORDS}
threads=${2:?}
ops=${3:?}
records=${4:?}
pipeline=${5:-1}
for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "redis_reads.sh: $tool not found" >&2; exit 77; }
done
tmp=$(mktemp -d /tmp/rdmarepl-redis-reads.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
read -r -a ports <<<"$(python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')"
start() {  # start NAME PORT [args]
  local name=$1 port=$2
  shift 2
  mkdir -p "$tmp/$name"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp/$name" --save "" --appendonly no \
    --protected-mode no --daemonize no --logfile "$tmp/$name.log" "$@" &
  pids+=($!)
  for _ in $(seq 1 500); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.01
  done
  echo "redis_reads.sh: $name did not start" >&2
  exit 1
}
start master "${ports[0]}" --repl-diskless-sync-delay 0
start replica1 "${ports[1]}" --replicaof 127.0.0.1 "${ports[0]}"
start replica2 "${ports[2]}" --replicaof 127.0.0.1 "${ports[0]}"
# Every key of the keyspace (redis-benchmark's key:%012d names), once, so that the replicas'
# GETs always find a value.
python3 - "${ports[0]}" "$records" "$value" <<'PY'
import socket, sys
port, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port)); v = b"x" * size; buf = []
for i in range(n):
    k = b"key:%012d" % i
    buf.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
    if len(buf) == 256 or i == n - 1:
        s.sendall(b"".join(buf)); want = len(buf); got = b""
        while got.count(b"\r\n") < want: got += s.recv(65536)
        buf = []
PY
target=$(redis-cli -p "${ports[0]}" info replication | tr -d '\r' | awk -F: '$1=="master_repl_offset"{print $2}')
for p in "${ports[1]}" "${ports[2]}"; do
  for _ in $(seq 1 3000); do
    off=$(redis-cli -p "$p" info replication | tr -d '\r' | awk -F: '$1=="slave_repl_offset"{print $2}')
    [[ "$off" -ge "$target" ]] && break
    sleep 0.01
  done
done
half=$((threads / 2 > 0 ? threads / 2 : 1))
# CPU ticks of the two replicas (utime + stime) and of this script's waited-for children
# (cutime + cstime: the redis-benchmark processes, once reaped), before and after the gets.
cpu_ticks() {
  local t=0 f
  for pid in "${pids[1]}" "${pids[2]}"; do
    read -r -a f <<<"$(sed 's/.*) //' "/proc/$pid/stat")"
    t=$((t + f[11] + f[12]))
  done
  read -r -a f <<<"$(sed 's/.*) //' "/proc/$$/stat")"
  echo $((t + f[13] + f[14]))
}
ticks0=$(cpu_ticks)
getters=()
for i in 1 2; do
  redis-benchmark -p "${ports[$i]}" -t get -n $((ops / 2)) -c "$half" -r "$records" -P "$pipeline" \
    --csv >"$tmp/get$i.csv" 2>/dev/null &
  getters+=($!)
done
wait "${getters[@]}"
cpu_s=$(awk -v d=$(($(cpu_ticks) - ticks0)) -v hz="$(getconf CLK_TCK)" 'BEGIN{print d / hz}')
python3 - "$tmp/get1.csv" "$tmp/get2.csv" "$value" "$cpu_s" "$ops" "$pipeline" <<'PY'
import csv, json, sys
rows = []
for f in sys.argv[1:3]:
    r = list(csv.reader(open(f)))
    head, vals = r[0], r[1]
    rows.append(dict(zip(head, vals)))
rps = sum(float(r["rps"]) for r in rows)
avg = sum(float(r["avg_latency_ms"]) for r in rows) / 2 * 1000
p50 = max(float(r["p50_latency_ms"]) for r in rows) * 1000
p99 = max(float(r["p99_latency_ms"]) for r in rows) * 1000
cpu_s, ops = float(sys.argv[4]), int(sys.argv[5])
print(json.dumps({"system": "redis", "value_bytes": int(sys.argv[3]), "pipeline": int(sys.argv[6]),
                  "throughput_ops": rps,
                  "avg_us": avg, "p50_us": p50, "p99_us": p99, "cpu_seconds": cpu_s,
                  "cpu_us_per_op": cpu_s * 1e6 / ops}))
PY
