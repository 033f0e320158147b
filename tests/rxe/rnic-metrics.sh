#!/bin/bash
# The RNIC collector inside the VM: replicated_kv replicates over verbs on rxe0 with
# --metrics-port, and the leader's /metrics is scraped until the run is over (--linger).
# rxe0's hw_counters as the collector exports them (sent and received packets) must have
# moved with the traffic since before the run and equal what sysfs holds after it, and the
# port must be reported ACTIVE with an active MTU derived from its netdev.
#   rnic-metrics.sh REPLICATED_KV
set -uo pipefail
kv="$1"
port=19400
hw=/sys/class/infiniband/rxe0/ports/1/hw_counters
fail() { echo "rnic-metrics: $*"; cat kv.log; exit 1; }
before_sent=$(cat "$hw/sent_pkts")
before_rcvd=$(cat "$hw/rcvd_pkts")
"$kv" --transport verbs --records 20k --no-kill --linger 6 --metrics-port "$port" \
  --timeout 240 >kv.log 2>&1 &
pid=$!
value() { grep -F "rdmarepl_rnic_hw_counter_total{device=\"rxe0\",port=\"1\",counter=\"$1\"}" \
  "$2" | awk '{print $2}'; }
# Scrape the leader until the run is over; the last scrape falls in --linger.
while kill -0 "$pid" 2>/dev/null; do
  if curl -s --max-time 2 "http://127.0.0.1:$port/metrics" >scrape.txt && grep -q rdmarepl_ scrape.txt; then
    cp scrape.txt last.txt
  fi
  sleep 0.5
done
wait "$pid" || fail "replicated_kv exited with $?"
grep -Eq '^  transport +verbs$' kv.log || fail "the run did not use verbs"
[[ -s last.txt ]] || fail "the leader's /metrics was never scraped"
grep rdmarepl_rnic_ last.txt | grep -v '^#'
# The run's traffic moved the counters, and the collector exported what sysfs holds.
for c in sent_pkts:$before_sent rcvd_pkts:$before_rcvd; do
  name=${c%%:*}
  before=${c#*:}
  scraped=$(value "$name" last.txt)
  now=$(cat "$hw/$name")
  [[ -n "$scraped" ]] || fail "no rxe0 $name series"
  awk -v a="$before" -v b="$scraped" 'BEGIN { exit !(b >= a + 1000) }' ||
    fail "rxe0 $name did not move with 20k records ($before before the run, $scraped scraped)"
  awk -v a="$scraped" -v b="$now" 'BEGIN { exit !(a == b) }' ||
    fail "rxe0 $name scraped $scraped but sysfs holds $now after the run"
  echo "rnic-metrics: rxe0 $name $before before the run, $scraped scraped after it"
done
grep -q 'rdmarepl_rnic_port_state_id{device="rxe0",port="1",state="ACTIVE"} 4' last.txt ||
  fail "rxe0 port 1 is not reported ACTIVE"
grep -q 'rdmarepl_rnic_port_active_mtu_bytes{device="rxe0",port="1"}' last.txt ||
  fail "no active MTU for rxe0 port 1"
echo "rnic-metrics: rxe0's counters, scraped from the leader, moved with the replication traffic"
