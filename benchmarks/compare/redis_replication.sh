#!/usr/bin/env bash
# Redis replication baseline for rdmarepl-bench: one Redis master and N replicas on loopback
# (ephemeral ports, temporary directories, persistence off), loaded with redis-benchmark SETs,
# timed from the start of the load until every replica's replication offset equals the
# master's. Prints one JSON object with the same fields as rdmarepl-bench.
#
# usage: redis_replication.sh [-n RECORDS] [-d VALUE_BYTES] [-r KEYSPACE] [-P PIPELINE]
#                             [-c CLIENTS] [--replicas N] [--json PATH]
#
# Defaults: -n 100000 -d 1024 -r RECORDS -P 16 -c 50 --replicas 2.
# Pipeline: redis-benchmark sends P commands per round trip on each of C connections. The
# default P=16 is a deliberately generous setting for Redis (without pipelining Redis spends
# most of its time in per-command system calls and is several times slower); rdmarepl batches
# writes by itself, so a pipelined Redis is the fair comparison. Pass -P 1 for the
# unpipelined number.
#
# Exit status: 0 on success (verified or not: see "verified"), 77 when redis-server or
# redis-benchmark is missing, 1 on other failures.
set -euo pipefail

records=100000
value=1024
keyspace=""
pipeline=16
clients=50
replicas=2
json=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) records=$2; shift 2 ;;
    -d) value=$2; shift 2 ;;
    -r) keyspace=$2; shift 2 ;;
    -P) pipeline=$2; shift 2 ;;
    -c) clients=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "redis_replication.sh: unknown argument '$1'; see --help" >&2; exit 1 ;;
  esac
done
keyspace=${keyspace:-$records}

for tool in redis-server redis-cli redis-benchmark; do
  if ! command -v "$tool" >/dev/null; then
    echo "redis_replication.sh: $tool not found; install redis-server and redis-tools" \
         "(scripts/setup does)" >&2
    exit 77
  fi
done

tmp=$(mktemp -d /tmp/rdmarepl-redis.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "redis_replication.sh: $*" >&2; exit 1; }

# N distinct ephemeral ports: bind port 0 N times at once, print the ports the kernel chose,
# release them (a port could be taken by someone else in between; start_server then fails).
free_ports() {
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

info_field() {  # info_field PORT SECTION FIELD
  redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2 }'
}

start_server() {  # start_server NAME PORT [extra args...]
  local name=$1 port=$2
  shift 2
  mkdir -p "$tmp/$name"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp/$name" --save "" --appendonly no \
    --protected-mode no --enable-debug-command yes --daemonize no \
    --logfile "$tmp/$name.log" "$@" &
  pids+=($!)
  for _ in $(seq 1 500); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.01
  done
  tail -5 "$tmp/$name.log" >&2 || true
  die "$name did not start on port $port"
}

read -r -a ports <<<"$(free_ports $((replicas + 1)))"
master_port=${ports[0]}
replica_ports=("${ports[@]:1}")
# Diskless full sync without its default 5 s wait for more replicas: the replicas attach to
# an empty master before the load starts.
start_server master "$master_port" --repl-diskless-sync-delay 0
for i in $(seq 1 "$replicas"); do
  start_server "replica$i" "${replica_ports[$((i - 1))]}" --replicaof 127.0.0.1 "$master_port"
done
for p in "${replica_ports[@]}"; do
  for _ in $(seq 1 1000); do
    [[ $(info_field "$p" replication master_link_status) == up ]] && break
    sleep 0.01
  done
  [[ $(info_field "$p" replication master_link_status) == up ]] ||
    die "replica on port $p did not connect to the master"
done

# The timed part runs in one python3 process so that polling the replicas costs a socket
# round trip (tens of microseconds), not a redis-cli start per poll.
python3 - "$tmp" "$master_port" "${replica_ports[@]}" >"$tmp/timing" <<PY || die "timing failed: $(tail -3 "$tmp/bench.err" 2>/dev/null)"
import os, resource, socket, subprocess, sys, time
tmp, master, replicas = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
def conn(port):
    s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); return s
def info(s, field):
    s.sendall(b"INFO replication\r\n")
    head = b""
    while not head.endswith(b"\r\n"): head += s.recv(1)
    n = int(head[1:-2]); body = b""
    while len(body) < n + 2: body += s.recv(n + 2 - len(body))
    for line in body.decode().split("\r\n"):
        if line.startswith(field + ":"): return int(line.split(":")[1])
    return -1
m, rs = conn(master), [conn(p) for p in replicas]
start = time.monotonic_ns()
with open(tmp + "/bench.csv", "w") as out, open(tmp + "/bench.err", "w") as err:
    rc = subprocess.call(["redis-benchmark", "-h", "127.0.0.1", "-p", str(master), "-t", "set",
                          "-n", "$records", "-d", "$value", "-r", "$keyspace", "-P", "$pipeline",
                          "-c", "$clients", "--csv"], stdout=out, stderr=err)
loaded = time.monotonic_ns()
if rc != 0: sys.exit(1)
# Caught up: every replica processed the master's replication stream up to the master's
# offset (the master stops writing once the load ended).
target = info(m, "master_repl_offset")
deadline = time.monotonic() + 60
while any(info(r, "slave_repl_offset") < target for r in rs):
    if time.monotonic() > deadline: sys.exit(2)
    time.sleep(0.0001)
end = time.monotonic_ns()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(start, loaded, end, ru.ru_utime + ru.ru_stime)
PY
read -r start loaded end bench_cpu <"$tmp/timing"

# Verification: DEBUG DIGEST (a hash over the whole dataset) and DBSIZE on every node.
master_digest=$(redis-cli -p "$master_port" debug digest | tr -d '\r')
master_size=$(redis-cli -p "$master_port" dbsize | tr -d '\r')
verified=true
for p in "${replica_ports[@]}"; do
  d=$(redis-cli -p "$p" debug digest | tr -d '\r')
  s=$(redis-cli -p "$p" dbsize | tr -d '\r')
  [[ "$d" == "$master_digest" && "$s" == "$master_size" ]] || verified=false
done

cpu=0
for p in "$master_port" "${replica_ports[@]}"; do
  u=$(info_field "$p" cpu used_cpu_user)
  s=$(info_field "$p" cpu used_cpu_sys)
  cpu=$(awk -v a="$cpu" -v b="$u" -v c="$s" 'BEGIN { print a + b + c }')
done
cpu=$(awk -v a="$cpu" -v b="$bench_cpu" 'BEGIN { print a + b }')

# redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
# "p95_latency_ms","p99_latency_ms","max_latency_ms"
line=$(grep '^"SET"' "$tmp/bench.csv" | tr -d '"')
IFS=, read -r _ rps avg _ p50 _ p99 _ <<<"$line"
version=$(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')

out=$(awk -v n="$records" -v d="$value" -v t0="$start" -v t1="$end" -v tl="$loaded" \
  -v rps="$rps" -v avg="$avg" -v p50="$p50" -v p99="$p99" -v cpu="$cpu" -v ver="$version" \
  -v f="$replicas" -v P="$pipeline" -v c="$clients" -v ok="$verified" -v ks="$keyspace" \
  -v dig="$master_digest" -v keys="$master_size" 'BEGIN {
    secs = (t1 - t0) / 1e9
    printf "{\"system\": \"redis\", \"transport\": \"tcp (redis %s replication)\", ", ver
    printf "\"followers\": %d, \"key_size\": 16, \"value_size\": %d, \"records\": %d, ", f, d, n
    printf "\"keyspace\": %d, \"pipeline\": %d, \"clients\": %d, ", ks, P, c
    printf "\"seconds\": %.6f, \"load_seconds\": %.6f, ", secs, (tl - t0) / 1e9
    printf "\"ops_per_sec\": %.1f, \"mb_per_sec\": %.3f, ", n / secs, n * (16 + d) / secs / 1e6
    printf "\"client_rps\": %.1f, ", rps
    printf "\"latency_us\": {\"avg\": %.1f, \"p50\": %.1f, \"p99\": %.1f, \"p999\": null, ", \
      avg * 1000, p50 * 1000, p99 * 1000
    printf "\"kind\": \"redis-benchmark SET latency at the master (not replicate-to-ack)\"}, "
    printf "\"cpu_seconds\": %.3f, \"verified\": %s, ", cpu, ok
    printf "\"verify_method\": \"DEBUG DIGEST and DBSIZE equal on master and every replica\", "
    printf "\"keys\": %d, \"digest\": \"%s\"}\n", keys, dig
  }')
echo "$out"
if [[ -n "$json" ]]; then echo "$out" >"$json"; fi
