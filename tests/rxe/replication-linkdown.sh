#!/bin/bash
# Link-down fault with replication running: replicated_kv (leader + 2 followers over verbs on
# rxe0) writes its workload; at 20% of it veth0 (rxe0's netdev) goes down until a connection
# has dropped (2 to 30 s).
# The QPs error out (the port error also arrives as IBV_EVENT_PORT_ERR), the leader's
# connections report a peer failure, it reconnects with backoff once the link is back and
# resends from what each follower acknowledged. Passes when the failure was seen, the run
# used verbs and every store equals the leader's (nothing lost, nothing applied twice).
#   replication-linkdown.sh REPLICATED_KV [RECORDS]
set -uo pipefail
kv="$1"
records="${2:-60k}"
# Line-buffered: the progress lines must reach kv.log as they are printed.
stdbuf -oL "$kv" --transport verbs --records "$records" --no-kill --failovers 0 --timeout 240 >kv.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '(20%)' kv.log && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
grep -q '(20%)' kv.log || { cat kv.log; echo "linkdown: the run never reached 20%"; exit 1; }
echo "linkdown: veth0 down at $(grep -c . kv.log) log lines"
port_state() { cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; }
# Waits up to 20 s for rxe0's port to reach state $1 (e.g. DOWN, ACTIVE).
wait_port() {
  for _ in $(seq 1 200); do
    [[ "$(port_state)" == *"$1"* ]] && return 0
    sleep 0.1
  done
  return 1
}
ip link set veth0 down
wait_port DOWN || echo "linkdown: rxe0's port did not go down within 20 s (state: $(port_state))"
echo "linkdown: rxe0 port $(port_state)"
# rxe delivers same-device traffic without the netdev, so the stream can go on while the port
# is down; what fails the connections is the port error, whose async event has been seen to
# arrive seconds late under emulation. Keep the link down until a connection has dropped (at
# least 2 s, at most 30 s), so the fault always lands while the link is down.
sleep 2
for _ in $(seq 1 280); do
  grep -q 'connection dropped' kv.log && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
ip link set veth0 up
wait_port ACTIVE || echo "linkdown: rxe0's port did not become active within 20 s (state: $(port_state))"
echo "linkdown: veth0 up, rxe0 port $(port_state)"
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
