#!/bin/bash
# rdmarepl-doctor inside the VM: on rxe0 every RDMA check passes (the MTU may warn: the
# virtio NIC has no jumbo frames), a deliberately small locked-memory limit is reported, and
# a write-with-immediate round trip runs over verbs against the doctor's own listener and,
# given repl_node, against a follower's channel (the probe), before and just after a leader
# starts replicating to it: the follower's store ends equal to the leader's.
#   doctor.sh RDMAREPL_DOCTOR [REPL_NODE]
set -uo pipefail
doctor="$1"
repl_node="${2:-}"
fail() { echo "doctor: $*"; exit 1; }

"$doctor" >doctor.log 2>&1
rc=$?
cat doctor.log
for check in "rdma devices" "port rxe0/1" "write-with-imm and read rxe0" "gid rxe0/1" \
             "max_mr_size rxe0" "max_qp rxe0" "max_qp_wr rxe0" "max_inline_data rxe0"; do
  grep -q "^PASS $check: " doctor.log || fail "'$check' did not pass on rxe0"
done
grep -Eq '^(PASS|WARN) mtu rxe0/1: active MTU [0-9]+, netdev [a-z0-9]+ MTU [0-9]+' doctor.log ||
  fail "no MTU line for rxe0"
grep -q '^PASS gid rxe0/1: RoCE v2 entry at index [0-9]* (0000:0000:0000:0000:0000:ffff:' \
  doctor.log || fail "the IPv4-mapped RoCE v2 GID was not found"
! grep -q '^FAIL' doctor.log || fail "a check failed on rxe0"
[[ $rc -eq 0 ]] || fail "exit status $rc with no FAIL line"

(ulimit -l 64 && "$doctor") >small.log 2>&1
cat small.log
grep -Eq '^(FAIL|WARN) memlock: locked-memory limit 64 KiB \(ulimit -l 64\); the channel registers' \
  small.log || fail "the 64 KiB memlock limit was not reported"

"$doctor" --listen 127.0.0.1:0 --transport verbs --connections 1 >listen.log 2>&1 &
listener=$!
port=""
for _ in $(seq 1 120); do
  port="$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\) over verbs$/\1/p' listen.log)"
  [[ -n "$port" ]] && break
  sleep 0.5
done
[[ -n "$port" ]] || { cat listen.log; fail "the listener did not start"; }
"$doctor" --transport verbs --timeout-ms 20000 --peer "127.0.0.1:$port" >peer.log 2>&1
cat peer.log listen.log
grep -Eq "^PASS peer 127.0.0.1:$port: 4096-byte write-with-immediate round trip to 'rdmarepl-doctor-listener' over verbs in [0-9]+ us" \
  peer.log || fail "no round trip over verbs"
wait "$listener" || fail "the listener exited with an error"
[[ -n "$repl_node" ]] || { echo "doctor: RDMA checks pass on rxe0, small memlock reported, round trip over verbs"; exit 0; }

# A follower over verbs that exits once it applied the leader's 3000 records.
"$repl_node" --transport verbs --listen 127.0.0.1 --port 0 --shards 2 --until-seqs 3000 \
  --wait-s 200 >follower.log 2>&1 &
follower=$!
fport=""
for _ in $(seq 1 120); do
  fport="$(sed -n 's/^PORT \([0-9]*\)$/\1/p' follower.log)"
  [[ -n "$fport" ]] && break
  sleep 0.5
done
[[ -n "$fport" ]] || { cat follower.log; fail "the follower did not start"; }
probe() {
  "$doctor" --transport verbs --timeout-ms 20000 --peer "127.0.0.1:$fport" >"$1" 2>&1
  cat "$1"
  grep -Eq "^PASS peer 127.0.0.1:$fport: write-with-immediate round trip to follower 'repl_node' \(2 shards\) over verbs in [0-9]+ us" \
    "$1" || fail "no probe round trip to the follower over verbs ($1)"
}
probe probe-idle.log
"$repl_node" --role leader --transport verbs --peers "127.0.0.1:$fport" --shards 2 \
  --records 3000 >leader.log 2>&1 &
leader=$!
probe probe-busy.log
wait "$leader" || { cat leader.log follower.log; fail "the leader failed"; }
wait "$follower" || { cat leader.log follower.log; fail "the follower did not apply everything"; }
cat leader.log follower.log
ld="$(grep '^DIGEST ' leader.log | awk '{print $2}')"
fd="$(grep '^DIGEST ' follower.log | awk '{print $2}')"
[[ -n "$ld" && "$ld" == "$fd" ]] || fail "the follower's store differs from the leader's"
echo "doctor: RDMA checks pass on rxe0, small memlock reported, round trips over verbs to a listener and to a follower"
