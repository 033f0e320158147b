#!/bin/bash
# The RNIC collector inside the VM: replicated_kv replicates over verbs on rxe0 with
# --metrics-port, and the leader's /metrics is scraped until the run is over (--linger).
# rxe0's hw_counters as the collector exports them (sent and received packets) must have
# moved with the traffic since before the run and lie between what sysfs held just before
# and just after that scrape (traffic may still flow while a slow guest scrapes), and the
# port must be reported ACTIVE with an active MTU derived from its netdev.
#   rnic-metrics.sh REPLICATED_KV
set -uo pipefail
kv="$1"
port=19400
hw=/sys/class/infiniband/rxe0/ports/1/hw_counters
fail() { echo "rnic-metrics: $*"; cat kv.log; exit 1; }
before_sent=$(cat "$hw/sent_pkts")
before_rcvd=$(cat "$hw/rcvd_pkts")
"$kv" --transport verbs --records 20k --no-kill --failovers 0 --linger 6 --metrics-port "$port" \
  --timeout 240 >kv.log 2>&1 &
pid=$!
value() { grep -F "rdmarepl_rnic_hw_counter_total{device=\"rxe0\",port=\"1\",counter=\"$1\"}" \
  "$2" | awk '{print $2}'; }
# Scrape the leader until the run is over; the last scrape falls in --linger.
# sysfs is read just before and just after each scrape: the bracket of the last one is kept.
while kill -0 "$pid" 2>/dev/null; do
  lo="$(cat "$hw/sent_pkts") $(cat "$hw/rcvd_pkts")"
  if curl -s --max-time 2 "http://127.0.0.1:$port/metrics" >scrape.txt && grep -q rdmarepl_ scrape.txt; then
    hi="$(cat "$hw/sent_pkts") $(cat "$hw/rcvd_pkts")"
    cp scrape.txt last.txt
    echo "$lo $hi" >bracket.txt
  fi
  sleep 0.5
done
wait "$pid" || fail "replicated_kv exited with $?"
grep -Eq '^  transport +verbs$' kv.log || fail "the run did not use verbs"
[[ -s last.txt ]] || fail "the leader's /metrics was never scraped"
grep rdmarepl_rnic_ last.txt | grep -v '^#'
# The run's traffic moved the counters, and the collector exported what sysfs held.
read -r lo_sent lo_rcvd hi_sent hi_rcvd <bracket.txt
for c in sent_pkts:$before_sent:$lo_sent:$hi_sent rcvd_pkts:$before_rcvd:$lo_rcvd:$hi_rcvd; do
  IFS=: read -r name before lo hi <<<"$c"
  scraped=$(value "$name" last.txt)
  [[ -n "$scraped" ]] || fail "no rxe0 $name series"
  awk -v a="$before" -v b="$scraped" 'BEGIN { exit !(b >= a + 1000) }' ||
    fail "rxe0 $name did not move with 20k records ($before before the run, $scraped scraped)"
  awk -v lo="$lo" -v s="$scraped" -v hi="$hi" 'BEGIN { exit !(lo <= s && s <= hi) }' ||
    fail "rxe0 $name scraped $scraped but sysfs held $lo before that scrape and $hi after it"
  echo "rnic-metrics: rxe0 $name $before before the run, $scraped in the last scrape ($lo-$hi in sysfs)"
done
grep -q 'rdmarepl_rnic_port_state_id{device="rxe0",port="1",state="ACTIVE"} 4' last.txt ||
  fail "rxe0 port 1 is not reported ACTIVE"
grep -q 'rdmarepl_rnic_port_active_mtu_bytes{device="rxe0",port="1"}' last.txt ||
  fail "no active MTU for rxe0 port 1"
echo "rnic-metrics: rxe0's counters, scraped from the leader, moved with the replication traffic"
