#!/usr/bin/env bash
# rdmarepl-ycsb with remote nodes, on this host: two follower processes (--role follower,
# loopback, free ports) and a client process (--role client) that loads the records through
# the leader and runs a workload against them; twice, each with fresh followers: workload C,
# then workload A with the leader's tuner on (--tuning). A round passes when the client exits
# 0 (every value read was one the leader wrote for its key), its JSON shows reads and the
# CPU of three processes, and each follower, stopped with SIGTERM, served reads and applied
# every write.
#   remote_smoke.sh RDMAREPL_YCSB WORK_DIR [TRANSPORT]
set -uo pipefail
ycsb="$1"
work="$2"
transport="${3:-tcp}"
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; }
trap cleanup EXIT
fail() {
  echo "remote_smoke: FAIL: $*"
  for f in "$work"/*/*.out "$work"/*/*.err; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}

round() {
  local name="$1" workload="$2"
  shift 2
  local d="$work/$name" n line rc keys applied
  local peers=() reads=()
  mkdir -p "$d"
  pids=()
  for n in 1 2; do
    "$ycsb" --role follower --transport "$transport" --listen 127.0.0.1 --psk smoke-key \
        --value 2048 >"$d/follower-$n.out" 2>"$d/follower-$n.err" &
    pids+=($!)
  done
  for n in 1 2; do
    for _ in $(seq 1 300); do grep -qs '^READY' "$d/follower-$n.out" && break; sleep 0.1; done
    line="$(grep -s '^READY' "$d/follower-$n.out")" || fail "$name: follower $n did not print READY"
    peers+=("$(sed -n 's/.*replication=\([^ ]*\).*/\1/p' <<<"$line")")
    reads+=("$(sed -n 's/.*reads=\([^ ]*\).*/\1/p' <<<"$line")")
  done
  "$ycsb" --role client --transport "$transport" --workload "$workload" --value 2048 \
      --threads 4 --recordcount 500 --operationcount 2000 --psk smoke-key "$@" \
      --peers "${peers[0]},${peers[1]}" --read-peers "${reads[0]},${reads[1]}" \
      --json "$d/result.json" >"$d/client.out" 2>"$d/client.err"
  rc=$?
  [[ $rc -eq 0 ]] || fail "$name: the client exited with $rc"
  python3 - "$d/result.json" "$workload" <<'PY' || fail "$name: the client's JSON"
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["workload"] for r in runs] == [sys.argv[2]], runs
r = runs[0]
assert r["mode"] == "remote" and r["verified"], r
assert r["ops"]["READ"]["operations"] > 0 and r["verified_reads"] > 0, r
assert r["cpu_processes"] == 3 and r["cpu_seconds_followers"] > 0, r
print(f"remote_smoke: workload {r['workload']} (tuning {r['tuning']}) verified: "
      f"{r['throughput_ops']:.0f} ops/s, {r['cpu_us_per_op']:.0f} CPU us/op over 3 processes")
PY
  cleanup
  for n in 1 2; do
    wait "${pids[$((n - 1))]}" || fail "$name: follower $n exited with $? after SIGTERM"
    line="$(grep -s '^STOPPED' "$d/follower-$n.out")" || fail "$name: follower $n printed no STOPPED line"
    keys="$(sed -n 's/.*read_keys=\([0-9]*\).*/\1/p' <<<"$line")"
    applied="$(sed -n 's/.*applied=\([0-9]*\).*/\1/p' <<<"$line")"
    [[ "${keys:-0}" -gt 0 ]] || fail "$name: follower $n served no reads: $line"
    [[ "${applied:-0}" -ge 500 ]] || fail "$name: follower $n applied ${applied:-0} seqs: $line"
    echo "remote_smoke: $name: follower $n: $line"
  done
  pids=()
}

round c C
round a-tuning A --tuning
echo "remote_smoke: PASS"
