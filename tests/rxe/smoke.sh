#!/bin/bash
# Smoke test of the VM harness: the rxe device is visible to libibverbs and an RC ping-pong
# over it succeeds (server and client both on rxe0, GID of the IPv4-mapped RoCE v2 entry).
set -euo pipefail
ibv_devices | tee /dev/stderr | grep -q rxe0
gid_index=""
for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
  if grep -q '0000:0000:0000:0000:0000:ffff:' "$f"; then gid_index="$(basename "$f")"; break; fi
done
[[ -n "$gid_index" ]] || { echo "smoke: no IPv4-mapped GID on rxe0"; exit 1; }
echo "smoke: using GID index $gid_index"
ibv_rc_pingpong -d rxe0 -g "$gid_index" -n 100 >server.log 2>&1 &
server=$!
# The server may take a while to listen on a slow (emulated, shared) CPU: retry the client.
ok=0
for _ in $(seq 1 60); do
  sleep 1
  if ibv_rc_pingpong -d rxe0 -g "$gid_index" -n 100 127.0.0.1 >client.log 2>&1; then
    ok=1
    break
  fi
  grep -q "Couldn't connect" client.log || break
done
[[ $ok -eq 1 ]] || { cat server.log client.log; exit 1; }
wait "$server" || { cat server.log; exit 1; }
cat client.log
grep -q '100 iters' client.log
echo "smoke: ibv_rc_pingpong over rxe0 passed"
