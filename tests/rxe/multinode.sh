#!/usr/bin/env bash
# Replication across three VMs: one node each, each with its own rxe device on its own
# virtio NIC, the three NICs joined by a QEMU multicast socket network (no host networking
# set-up needed). VM 1 runs the leader, VMs 2 and 3 a follower each (tests/replication/
# repl_node over verbs). Each VM writes its node's DIGEST line to a directory all three
# share; the test passes when both followers applied every record and their stores equal
# the leader's.
#   multinode.sh REPL_NODE WORK_DIR RECORDS [run-in-vm options...]
# Each VM gets 768 MiB unless the options say otherwise (the leader's retained window and
# the pinned rings do not fit 256 MiB next to the guest's own needs).
set -uo pipefail
node="$(realpath "$1")"
work="$(realpath -m "$2")"
records="$3"
shift 3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work"
mkdir -p "$work/shared"
shared="$work/shared"
# A group per run: concurrent runs (other checkouts) do not share a segment.
group="230.0.0.1:$((20000 + RANDOM % 20000))"
port=7471
ips=(10.9.1.1 10.9.1.2 10.9.1.3)
# The followers listen on non-loopback addresses: the nodes authenticate with a key.
psk="multinode-$RANDOM$RANDOM"

cat >"$work/follower.sh" <<GUEST
#!/bin/bash
# Follower: listens on its rxe address, exits once every record is applied (or, when the
# leader has given up, 30 s after it did).
n=\$1
"$node" --role follower --transport verbs --listen "\$RDMAREPL_RXE_ADDR" --port $port \\
        --psk "$psk" \\
        --shards 1 --until-seqs $records --wait-s 400 \\
        >"$shared/follower-\$n.tmp" 2>"$shared/follower-\$n.err" &
pid=\$!
while kill -0 \$pid 2>/dev/null; do
  if [[ -e "$shared/leader.done" ]]; then
    for _ in \$(seq 1 60); do kill -0 \$pid 2>/dev/null || break; sleep 0.5; done
    kill \$pid 2>/dev/null
    break
  fi
  sleep 0.5
done
wait \$pid
rc=\$?
mv "$shared/follower-\$n.tmp" "$shared/follower-\$n.out"
exit \$rc
GUEST
cat >"$work/leader.sh" <<GUEST
#!/bin/bash
# Leader: waits until both followers listen (their PORT lines), then replicates.
for _ in \$(seq 1 1200); do
  n=0
  for f in 2 3; do grep -qs '^PORT' "$shared/follower-\$f.tmp" "$shared/follower-\$f.out" && n=\$((n + 1)); done
  [[ \$n -eq 2 ]] && break
  sleep 0.5
done
for ip in ${ips[1]} ${ips[2]}; do busybox ping -c 1 -W 2 "\$ip" >/dev/null || echo "leader: no ping reply from \$ip"; done
"$node" --role leader --transport verbs --peers ${ips[1]}:$port,${ips[2]}:$port \\
        --psk "$psk" \\
        --shards 1 --records $records >"$shared/leader.out" 2>"$shared/leader.err"
rc=\$?
touch "$shared/leader.done"
exit \$rc
GUEST

start=$(date +%s)
pids=()
for i in 0 1 2; do
  n=$((i + 1))
  script="$work/follower.sh"
  args=("$n")
  [[ $n -eq 1 ]] && { script="$work/leader.sh"; args=(); }
  printf '#!/bin/bash\nexec /bin/bash %q %s\n' "$script" "${args[*]-}" >"$work/vm$n.sh"
  "$here/run-in-vm.sh" --work-dir "$work/vm$n" --rw "$shared" --net-mcast "$group" \
      --ip "${ips[$i]}" --mem 768 "$@" --script "$work/vm$n.sh" >"$work/vm$n.log" 2>&1 &
  pids+=($!)
done
rcs=()
for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
elapsed=$(($(date +%s) - start))

fail=0
for n in 1 2 3; do
  echo "----- vm$n (exit ${rcs[$((n - 1))]}) -----"
  sed -n '/rxe-guest: running/,$p' "$work/vm$n.log" | grep -v '^\[' | head -40
done
for f in leader follower-2 follower-3; do
  echo "----- $f -----"
  cat "$shared/$f.out" 2>/dev/null
  tail -20 "$shared/$f.err" 2>/dev/null
done
leader="$(grep -s '^DIGEST' "$shared/leader.out")"
[[ -n "$leader" ]] || { echo "multinode: the leader printed no digest"; fail=1; }
read -r _ ldigest _ lseqs <<<"$leader"
[[ "${lseqs:-0}" -eq "$records" ]] || { echo "multinode: leader wrote ${lseqs:-0} of $records"; fail=1; }
for n in 2 3; do
  d="$(grep -s '^DIGEST' "$shared/follower-$n.out")"
  read -r _ fdigest _ fseqs <<<"$d"
  if [[ -z "$d" || "$fdigest" != "${ldigest:-x}" || "$fseqs" != "${lseqs:-x}" ]]; then
    echo "multinode: follower $n (${ips[$((n - 1))]}) differs: '$d' vs leader '$leader'"
    fail=1
  else
    echo "multinode: follower $n (${ips[$((n - 1))]}) equals the leader ($fseqs records)"
  fi
done
for i in 0 1 2; do [[ ${rcs[$i]} -eq 0 ]] || { echo "multinode: vm$((i + 1)) exited with ${rcs[$i]}"; fail=1; }; done
echo "multinode: three VMs, $records records, ${elapsed}s wall clock, $([[ $fail -eq 0 ]] && echo PASS || echo FAIL)"
exit $fail
