#!/bin/bash
# Link-down fault with replication running: replicated_kv (leader + 2 followers over verbs on
# rxe0) writes its workload; at 20% of it veth0 (rxe0's netdev) goes down for two seconds.
# The QPs error out (the port error also arrives as IBV_EVENT_PORT_ERR), the leader's
# connections report a peer failure, it reconnects with backoff once the link is back and
# resends from what each follower acknowledged. Passes when the failure was seen, the run
# used verbs and every store equals the leader's (nothing lost, nothing applied twice).
#   replication-linkdown.sh REPLICATED_KV [RECORDS]
set -uo pipefail
kv="$1"
records="${2:-20k}"
# Line-buffered: the progress lines must reach kv.log as they are printed.
stdbuf -oL "$kv" --transport verbs --records "$records" --no-kill --timeout 240 >kv.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '(20%)' kv.log && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
grep -q '(20%)' kv.log || { cat kv.log; echo "linkdown: the run never reached 20%"; exit 1; }
echo "linkdown: veth0 down at $(grep -c . kv.log) log lines"
ip link set veth0 down
sleep 2
ip link set veth0 up
echo "linkdown: veth0 up"
wait "$pid"
rc=$?
cat kv.log
fail=0
grep -Eq '^  transport +verbs$' kv.log || { echo "linkdown: the run did not use verbs"; fail=1; }
grep -q 'connection dropped' kv.log ||
  { echo "linkdown: no connection failed: the fault did not hit the stream"; fail=1; }
grep -q 'IBV_EVENT_PORT_ERR' kv.log ||
  { echo "linkdown: the port error was not read from the async events"; fail=1; }
[[ $rc -eq 0 ]] || { echo "linkdown: replicated_kv exited with $rc"; fail=1; }
grep -q 'verified         yes' kv.log || { echo "linkdown: stores not verified"; fail=1; }
[[ $fail -eq 0 ]] && echo "linkdown: connections failed and recovered; every store equal"
exit $fail
