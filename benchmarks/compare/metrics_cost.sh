#!/usr/bin/env bash
# The cost of the Prometheus exposition: rdmarepl-bench at 1 KiB values with every process's
# metrics exposed (--metrics-port) and scraped every second by a real Prometheus server,
# against the same run without. The two kinds of run alternate, ROUNDS of each, in one
# invocation; the ratio of the median throughputs is printed (docs/benchmarks.md,
# "Metrics exposition").
#
#   benchmarks/compare/metrics_cost.sh [BENCH] [ROUNDS] [RECORDS]
set -euo pipefail
BENCH=${1:-build/benchmarks/rdmarepl-bench}
ROUNDS=${2:-5}
RECORDS=${3:-1000000}
PROM=${PROMETHEUS_BIN:-/usr/bin/prometheus}
PY=/usr/bin/python3
[[ -x "$BENCH" ]] || { echo "metrics_cost: no bench at $BENCH; build rdmarepl-bench" >&2; exit 2; }
[[ -x "$PROM" ]] || { echo "metrics_cost: no prometheus server at $PROM; install prometheus" >&2; exit 2; }

tmp=$(mktemp -d)
prom_pid=""
cleanup() {
  [[ -n "$prom_pid" ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Free ports: one for the server, three consecutive ones for the leader and two followers.
read -r web base < <($PY - <<'PY'
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
while True:
    b = random.randint(20000, 30000)
    if all(free(b + i) for i in range(4)):
        print(b + 3, b); break
PY
)
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rdmarepl
    static_configs:
      - targets: ['127.0.0.1:$base', '127.0.0.1:$((base + 1))', '127.0.0.1:$((base + 2))']
YML
"$PROM" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$web" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
api() { $PY -c "import json,sys,urllib.request; print(json.load(urllib.request.urlopen('http://127.0.0.1:$web/api/v1/' + sys.argv[1]))['data'])" "$1"; }
# The value of an instant query that returns one sample.
scalar() { $PY -c "import json,sys,urllib.request,urllib.parse; print(json.load(urllib.request.urlopen('http://127.0.0.1:$web/api/v1/query?query=' + urllib.parse.quote(sys.argv[1])))['data']['result'][0]['value'][1])" "$1"; }
# The server starts scraping some seconds after it is ready.
for _ in $(seq 100); do
  if api targets 2>/dev/null | grep -q "lastScrape': '20"; then break; fi
  sleep 0.3
done

run() {  # run KIND ROUND [extra flags]
  local kind=$1 round=$2
  shift 2
  "$BENCH" --records "$RECORDS" --value-size 1024 --followers 2 --ack all --quiet \
    --json "$tmp/$kind-$round.json" "$@" >/dev/null
}
for r in $(seq "$ROUNDS"); do
  run off "$r"
  run on "$r" --metrics-port "$base"
done
sleep 2  # the last scrape of the last run
# Samples of one series per process: successful scrapes of the runs' processes.
scrapes=$(scalar "sum(count_over_time(rdmarepl_followers[1h]))")

$PY - "$tmp" "$ROUNDS" "$scrapes" <<'PY'
import json, statistics, sys
tmp, rounds, scrapes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def ops(kind):
    return [json.load(open(f"{tmp}/{kind}-{r}.json"))["ops_per_sec"] for r in range(1, rounds + 1)]
off, on = ops("off"), ops("on")
print("without metrics   ops/s:", ", ".join(f"{v:,.0f}" for v in off), f"(median {statistics.median(off):,.0f})")
print("exposed + scraped ops/s:", ", ".join(f"{v:,.0f}" for v in on), f"(median {statistics.median(on):,.0f})")
print("scrapes of the runs' processes (samples of rdmarepl_followers):", scrapes)
print(f"ratio exposed/without = {statistics.median(on) / statistics.median(off):.3f}")
PY
