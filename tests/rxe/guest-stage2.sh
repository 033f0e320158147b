#!/bin/sh
# Stage 2 of the test VM, run as PID 1 from the host's root file system (see run-in-vm.sh):
# sets up Soft-RoCE (rdma_rxe on a veth pair), runs the command file from the work share,
# prints its exit code on the console and powers the VM off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8
for p in $(cat /proc/cmdline); do
  case "$p" in
    rxe_*=*) export "$p" ;;
  esac
done

finish() {
  echo "RXE-EXIT-CODE: $1"
  echo "$1" >"$rxe_work/exit-code"
  sync
  echo o >/proc/sysrq-trigger
  # The power-off is asynchronous and the root file system is already gone: spin on
  # builtins only (PID 1 must not exit).
  while :; do :; done
}

setup_rdma() {
  modprobe rdma_rxe || return 1
  modprobe rdma_ucm || return 1
  ip link set lo up
  if [ -n "$rxe_ip" ]; then
    # Multi-node: rxe0 on the virtio NIC that joins the other VMs (run-in-vm.sh --net-mcast).
    modprobe virtio_net || return 1
    i=0
    while [ ! -e /sys/class/net/eth0 ]; do
      i=$((i + 1))
      [ $i -gt 100 ] && { echo "rxe-guest: no eth0"; return 1; }
      sleep 0.1
    done
    ip link set eth0 mtu "$rxe_mtu" || return 1
    ip addr add "$rxe_ip/24" dev eth0 || return 1
    ip link set eth0 up || return 1
    rdma link add rxe0 type rxe netdev eth0 || return 1
    addr="$rxe_ip"
  else
    ip link add veth0 mtu "$rxe_mtu" type veth peer name veth1 mtu "$rxe_mtu" || return 1
    ip addr add 10.9.0.1/24 dev veth0 || return 1
    ip link set veth0 up && ip link set veth1 up || return 1
    rdma link add rxe0 type rxe netdev veth0 || return 1
    addr=10.9.0.1
  fi
  # The RoCE v2 GID (::ffff:a.b.c.d) appears once the address is bound; wait for it.
  gid="0000:0000:0000:0000:0000:ffff:$(echo "$addr" | tr . ' ' |
                                          { read -r a b c d; printf '%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"; })"
  i=0
  while ! grep -qs "$gid" /sys/class/infiniband/rxe0/ports/1/gids/*; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "rxe-guest: the IPv4-mapped GID never appeared"; return 1; }
    sleep 0.1
  done
  return 0
}

ip link set lo up
if [ "$rxe_rdma" = 1 ]; then
  setup_rdma || { echo "rxe-guest: Soft-RoCE set-up failed"; finish 126; }
  export RDMAREPL_RXE_DEVICE=rxe0 RDMAREPL_RXE_ADDR="$addr"
fi
ulimit -l unlimited
ulimit -c 0
cd "$rxe_work" || finish 126
echo "rxe-guest: running $rxe_work/command.sh (uptime $(cut -d' ' -f1 /proc/uptime) s)"
/bin/bash "$rxe_work/command.sh" </dev/null
rc=$?
echo "rxe-guest: command finished (uptime $(cut -d' ' -f1 /proc/uptime) s)"
finish $rc
