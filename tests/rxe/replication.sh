#!/bin/bash
# End-to-end replication over verbs inside the VM: replicated_kv runs a leader and two
# followers as separate processes, every connection a verbs RC QP on rxe0 (bootstrap over
# loopback TCP). Part way, follower-1 is killed and restarted empty; the leader reconnects
# and catches it up. Every follower serves reads over verbs too, and the leader reads keys
# back from each. Passes when the run used verbs, every store equals the leader's and every
# key read back does.
#   replication.sh REPLICATED_KV [RECORDS]
set -uo pipefail
kv="$1"
records="${2:-20k}"
"$kv" --transport verbs --records "$records" --failovers 0 --timeout 240 >kv.log 2>&1
rc=$?
cat kv.log
grep -Eq '^  transport +verbs$' kv.log || { echo "replication: the run did not use verbs"; exit 1; }
[[ $rc -eq 0 ]] || { echo "replication: replicated_kv exited with $rc"; exit 1; }
grep -q 'verified         yes' kv.log || { echo "replication: stores not verified"; exit 1; }
grep -q "read servers: every answer equals the leader's store" kv.log ||
  { echo "replication: keys read back from the followers were not all equal"; exit 1; }
echo "replication: leader + 2 followers over verbs, every store equal, reads equal"
