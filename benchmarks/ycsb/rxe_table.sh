#!/usr/bin/env bash
# The Soft-RoCE YCSB table of docs/benchmarks.md ("YCSB across three Soft-RoCE VMs"): three
# QEMU VMs joined by a QEMU multicast socket network, each with its own rxe device on its
# virtio NIC (as tests/rxe/multinode.sh): VM 1 runs the leader and the YCSB client
# (rdmarepl-ycsb --role client), VMs 2 and 3 a follower each serving reads
# (rdmarepl-ycsb --role follower). One boot runs every row of the plan: for each column
# (tcp: the TCP transport over the VMs' virtio network; verbs: RDMA over rxe, static knobs;
# verbs+tuning: the same with the leader channel's XGBoost tuner), each workload and each
# value size, the followers are started afresh (new ports), the client loads the records and
# runs the workload, then the followers are stopped. Prints one markdown row per run and
# writes OUT_DIR/table.md, OUT_DIR/table.json and each run's files under OUT_DIR/vm/shared.
#
# usage: benchmarks/ycsb/rxe_table.sh BUILD_DIR OUT_DIR [options] [-- run-in-vm options]
#   --columns "tcp verbs verbs+tuning"   which columns, in this order
#   --workloads "C"                      YCSB workloads (letters), each a row per size
#   --sizes "1024 4096 16384"            value bytes
#   --threads N (8)  --ops N (5000)  --records N (2000)  --timeout S (3000, the whole boot)
#   --node-args "ARGS"                   more rdmarepl-ycsb flags for every node (e.g.
#                                        "--poll-interval-us 1000"), the same on all three
#   --netem "SPEC"                       a netem qdisc on every VM's NIC (e.g. "loss 1%"):
#                                        packet loss makes rxe resend (docs/transport.md,
#                                        "Soft-RoCE: remote_invalid_request ...")
#   --rxe-trace                          rxe's responder and completer state traces (kernel
#                                        dynamic debug) into each row's dmesg-*.txt; give the
#                                        guests a large log: -- --kernel-args log_buf_len=64M
#   --capture                            tcpdump (host's, snap length 96) of the RoCE packets
#                                        on each follower VM into each row's cap-f*.pcap
# Every row also keeps each node's rxe counters (`rdma statistic`) as stat-*.txt in its
# directory under OUT_DIR/vm/shared.
# Exit status 0 only when every row ran, verified (every value read was one the leader wrote
# for its key), read something, and each follower served reads.
# Run it under `flock /tmp/rdmarepl-vm.lock` so that it does not share the cores with other
# VM runs.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
build="$(realpath "$1")"
out="$(realpath -m "$2")"
shift 2
columns="tcp verbs verbs+tuning"
workloads="C"
sizes="1024 4096 16384"
threads=8
ops=5000
records=2000
timeout_s=3000
node_args=""
netem=""
trace=0
capture=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --columns) columns="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --records) records="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --node-args) node_args="$2"; shift 2 ;;
    --netem) netem="$2"; shift 2 ;;
    --rxe-trace) trace=1; shift ;;
    --capture) capture=1; shift ;;
    --) shift; break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "rxe_table: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
ycsb="$build/benchmarks/rdmarepl-ycsb"
if [[ $capture -eq 1 ]] && ! command -v tcpdump >/dev/null; then
  echo "rxe_table: --capture needs tcpdump on this machine (the guests run the host's)" >&2
  exit 2
fi
[[ -x "$ycsb" ]] || { echo "rxe_table: $ycsb not built (cmake --build $build --target rdmarepl-ycsb)" >&2; exit 2; }
vm_run="$here/../../tests/rxe/run-in-vm.sh"

rm -rf "$out/vm"
mkdir -p "$out/vm/shared"
work="$out/vm"
shared="$work/shared"
group="230.0.0.1:$((20000 + RANDOM % 20000))"
ips=(10.9.1.1 10.9.1.2 10.9.1.3)
# The followers listen on the VMs' network: every connection authenticates with this key.
psk="ycsb-$RANDOM$RANDOM"

# The plan: one line per run, "ID PORT TRANSPORT TUNING WORKLOAD VALUE_BYTES COLUMN".
plan="$work/plan"
: >"$plan"
i=0
for col in $columns; do
  case "$col" in
    tcp) transport=tcp tuning=0 ;;
    verbs) transport=verbs tuning=0 ;;
    verbs+tuning) transport=verbs tuning=1 ;;
    *) echo "rxe_table: unknown column '$col' (tcp, verbs, verbs+tuning)" >&2; exit 2 ;;
  esac
  for w in $workloads; do
    for size in $sizes; do
      i=$((i + 1))
      printf 'r%02d %d %s %d %s %d %s\n' "$i" $((7400 + 2 * i)) "$transport" "$tuning" "$w" \
        "$size" "$col" >>"$plan"
    done
  done
done

# Guest-side pieces: set-up of each VM, and what each row keeps besides its results.
setup=""
[[ -n "$netem" ]] && setup+="modprobe sch_netem && tc qdisc replace dev eth0 root netem $netem || exit 1"$'\n'
if [[ $trace -eq 1 ]]; then
  setup+="mount -t debugfs none /sys/kernel/debug 2>/dev/null"$'\n'
  setup+="echo 'func rxe_responder +p' >/sys/kernel/debug/dynamic_debug/control || exit 1"$'\n'
  setup+="echo 'func rxe_completer +p' >/sys/kernel/debug/dynamic_debug/control || exit 1"$'\n'
fi
# $who names the node in the file names: f1, f2 (followers) or l (the leader).
keep='rdma statistic show link rxe0/1 >"$d/stat-$who.txt" 2>&1'
[[ $trace -eq 1 ]] && keep+='; dmesg -c >"$d/dmesg-$who.txt" 2>&1'

cap_start=":"
cap_stop=":"
if [[ $capture -eq 1 ]]; then
  # Straight into the row's directory (the guests' /tmp can be the host's, shared by all
  # three); -Z root: tcpdump would otherwise drop to a user that cannot write there.
  cap_start='tcpdump -Z root -i eth0 -s 96 -B 8192 -w "$d/cap-f$n.pcap" udp port 4791 >/dev/null 2>"$d/tcpdump-$n.err" & tpid=$!; sleep 1'
  cap_stop='kill -INT $tpid; wait $tpid'
fi

cat >"$work/follower.sh" <<GUEST
#!/bin/bash
# Follower n: for each run of the plan, a fresh follower on this VM's rxe address until the
# client of that run is done.
n=\$1
who=f\$n
$setup
while read -r id port transport tuning w size col; do
  d="$shared/\$id"
  mkdir -p "\$d"
  $cap_start
  "$ycsb" --role follower --transport \$transport --listen "\$RDMAREPL_RXE_ADDR" \\
      --port \$port --read-port \$((port + 1)) --psk "$psk" --value \$size $node_args \\
      >"\$d/follower-\$n.out" 2>"\$d/follower-\$n.err" &
  pid=\$!
  while kill -0 \$pid 2>/dev/null && [[ ! -e "\$d/done" ]]; do sleep 0.5; done
  kill -TERM \$pid 2>/dev/null
  wait \$pid
  echo \$? >"\$d/follower-\$n.rc"
  $cap_stop
  $keep
done <"$plan"
GUEST
cat >"$work/leader.sh" <<GUEST
#!/bin/bash
# Leader and YCSB client: for each run, waits until both followers are READY, then runs.
fail=0
who=l
$setup
while read -r id port transport tuning w size col; do
  d="$shared/\$id"
  mkdir -p "\$d"
  for _ in \$(seq 1 240); do
    grep -qs '^READY' "\$d/follower-2.out" && grep -qs '^READY' "\$d/follower-3.out" && break
    sleep 0.5
  done
  args=(--role client --transport \$transport --workload \$w --value \$size
        --distribution uniform --threads $threads --operationcount $ops --recordcount $records
        --peers ${ips[1]}:\$port,${ips[2]}:\$port
        --read-peers ${ips[1]}:\$((port + 1)),${ips[2]}:\$((port + 1)) $node_args)
  [[ \$tuning -eq 1 ]] && args+=(--tuning)
  echo "rdmarepl-ycsb \${args[*]}" >"\$d/command"
  date +%s >"\$d/start"
  "$ycsb" "\${args[@]}" --psk "$psk" --json "\$d/result.json" >"\$d/client.out" 2>"\$d/client.err"
  rc=\$?
  echo \$rc >"\$d/client.rc"
  $keep
  date +%s >"\$d/end"
  [[ \$rc -eq 0 ]] || fail=1
  touch "\$d/done"
done <"$plan"
exit \$fail
GUEST

echo "rxe_table: $(wc -l <"$plan") runs (columns: $columns; workloads: $workloads; sizes: $sizes;" \
     "$threads threads, $ops operations, $records records each); host: $(uptime)" >&2
uptime >"$out/uptime-start"
start=$(date +%s)
pids=()
for i in 0 1 2; do
  n=$((i + 1))
  script="$work/follower.sh"
  args=("$n")
  [[ $n -eq 1 ]] && { script="$work/leader.sh"; args=(); }
  printf '#!/bin/bash\nexec /bin/bash %q %s\n' "$script" "${args[*]-}" >"$work/vm$n.sh"
  "$vm_run" --work-dir "$work/vm$n" --rw "$shared" --net-mcast "$group" --ip "${ips[$i]}" \
      --mem 768 --timeout "$timeout_s" --quiet-boot "$@" --script "$work/vm$n.sh" \
      >"$work/vm$n.log" 2>&1 &
  pids+=($!)
done
rcs=()
for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
elapsed=$(($(date +%s) - start))
uptime >"$out/uptime-end"

fail=0
for i in 0 1 2; do
  if [[ ${rcs[$i]} -ne 0 ]]; then
    echo "rxe_table: vm$((i + 1)) exited with ${rcs[$i]}; its log:" >&2
    tail -30 "$work/vm$((i + 1)).log" >&2
    fail=1
  fi
done
python3 "$here/rxe_table_rows.py" "$plan" "$shared" "$out" \
  "rxe_table.sh BUILD_DIR OUT_DIR --threads $threads --ops $ops --records $records${node_args:+ --node-args \"$node_args\"}" || fail=1
echo "rxe_table: ${elapsed}s wall clock; host at the start: $(cat "$out/uptime-start");" \
     "at the end: $(cat "$out/uptime-end"); $([[ $fail -eq 0 ]] && echo PASS || echo FAIL)"
exit $fail
