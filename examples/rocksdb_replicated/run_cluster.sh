#!/usr/bin/env bash
# One leader and two followers of the replicated RocksDB example as separate processes, each
# with its own database directory (ctest label rocksdb; scripts/test runs it):
#   1. follower 1 and follower 2 start; follower 2 is told to kill itself (SIGKILL) right
#      after the database write that reaches seq 400, before acknowledging it;
#   2. the leader writes puts, deletes and 16-record batches (pairs of counters with a
#      constant sum), ack=all; follower 2 dies at seq 400 and is restarted (it resumes from
#      its database's position: nothing applied twice, nothing skipped);
#   3. follower 1 is killed with kill -9 part way and restarted;
#   4. the leader is killed with kill -9 part way and restarted (it recovers from its log
#      and its database), then kills itself once its followers committed writes it has not
#      written to its own database yet, and is restarted again (its log brings the database
#      up to date), then writes more;
#   5. the followers stop (SIGTERM) and report their readers' snapshot checks of the batch
#      invariant: never broken;
#   6. a full scan of the three databases: identical digests, the invariant holds, and in
#      each the records applied equal the last seq (exactly once).
# Usage: run_cluster.sh <path to rocksdb_node> [work dir]
set -uo pipefail
NODE=${1:?usage: run_cluster.sh <rocksdb_node> [work dir]}
WORK=${2:-$(mktemp -d /tmp/rocksdb_replicated.XXXXXX)}
mkdir -p "$WORK"
BASE=$((20000 + RANDOM % 20000))
P1=$BASE P2=$((BASE + 1))
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
fail() { echo "run_cluster: FAIL: $*"; for f in "$WORK"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
log() { echo "run_cluster: $*"; }

start_follower() {  # n port [extra args]
  local n=$1 port=$2; shift 2
  "$NODE" follower --db "$WORK/f$n" --port "$port" "$@" >>"$WORK/f$n.log" 2>&1 &
  eval "F$n=$!"
  PIDS+=($!)
}
start_leader() {  # writes seed [extra args]
  local writes=$1 seed=$2; shift 2
  "$NODE" leader --db "$WORK/leader" --wal "$WORK/leader-wal" --peer "127.0.0.1:$P1" \
    --peer "127.0.0.1:$P2" --writes "$writes" --seed "$seed" "$@" >>"$WORK/leader.log" 2>&1 &
  L=$!
  PIDS+=($!)
}
applied() {  # log file: the last seq a leader line reports, or 0
  grep -o 'resuming after seq [0-9]*' "$1" | tail -1 | grep -o '[0-9]*$' || echo 0
}
alive() { kill -0 "$1" 2>/dev/null; }

start_follower 1 "$P1"
start_follower 2 "$P2" --crash-after-seq 400
sleep 0.3
# Far more writes than it can make before it is killed (about 3 s in, step 4), however fast
# the machine: the kill, not the count, ends this leader.
start_leader 1000000 1

# Follower 2 kills itself between its database write of seq 400 and the acknowledgement.
for _ in $(seq 200); do alive "$F2" || break; sleep 0.05; done
alive "$F2" && fail "follower 2 did not crash at seq 400"
grep -q "crashing after seq" "$WORK/f2.log" || fail "follower 2 died, but not at its crash point"
log "follower 2 crashed after its database write of seq >= 400; restarting it"
start_follower 2 "$P2"

sleep 1
log "kill -9 follower 1"
kill -9 "$F1"; wait "$F1" 2>/dev/null
sleep 0.5
start_follower 1 "$P1"

sleep 1
alive "$L" || fail "the leader exited before it could be killed (see its log)"
log "kill -9 leader"
kill -9 "$L"; wait "$L" 2>/dev/null
# Restarted, it dies once more between a commit and its own database write: the next start
# applies those writes from its log (recovery applied > 0 records).
start_leader 3000 2 --crash-after-writes 1000
wait "$L" 2>/dev/null
grep -q "crashing with" "$WORK/leader.log" || fail "the leader did not crash after 1000 writes"
start_leader 2000 3
wait "$L" || fail "the restarted leader failed"
grep -q "recovery applied [1-9]" "$WORK/leader.log" || fail "the leader's log recovered nothing"
grep -q "writes done" "$WORK/leader.log" || fail "the leader did not finish"

for n in 1 2; do
  eval "pid=\$F$n"
  kill -TERM "$pid"
  wait "$pid" || fail "follower $n exited with status $? (invariant broken?)"
done
grep -q "INVARIANT BROKEN" "$WORK"/f*.log && fail "a follower's reader saw a broken batch"
for n in 1 2; do
  line=$(grep "reader:" "$WORK/f$n.log" | tail -1)
  log "follower $n: $line"
  [[ "$line" =~ reader:\ ([0-9]+)\ snapshot\ checks,\ 0\ broken ]] || fail "follower $n reader"
  [[ ${BASH_REMATCH[1]} -gt 0 ]] || fail "follower $n's reader made no checks"
done

declare -A DIGEST
for db in leader f1 f2; do
  out=$("$NODE" scan --db "$WORK/$db") || fail "scan of $db: $out"
  log "$db: $out"
  DIGEST[$db]=$(echo "$out" | awk '{print $2, $4}')
done
[[ "${DIGEST[leader]}" == "${DIGEST[f1]}" && "${DIGEST[leader]}" == "${DIGEST[f2]}" ]] ||
  fail "the databases differ"
log "PASS: three identical databases ($WORK)"
[[ -n "${RDMAREPL_KEEP:-}" ]] || rm -rf "$WORK"  # RDMAREPL_KEEP=1 keeps the logs
