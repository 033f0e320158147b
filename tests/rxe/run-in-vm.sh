#!/usr/bin/env bash
# Runs one command inside a QEMU (TCG) virtual machine that boots Debian's kernel with the
# Soft-RoCE driver, so verbs code runs against a real RDMA stack on machines without RDMA.
#
#   run-in-vm.sh [options] -- COMMAND [ARGS...]
#   run-in-vm.sh [options] --script FILE
#
# The host's root file system is the guest's root (read-only, over 9p), so host-built
# binaries run unchanged at the same paths. The work directory (and every --rw directory) is
# mounted writable at the same path as on the host. In the guest, rdma_rxe and rdma_ucm are
# loaded, veth0 (10.9.0.1/24) <-> veth1 is created and rxe0 is bound to veth0; then COMMAND
# runs from the work directory with RDMAREPL_RXE_DEVICE=rxe0 in its environment.
#
# Exit status: COMMAND's exit status as printed by the guest on its console. A VM that does
# not boot, or does not finish within --timeout seconds, is a failure (status 124/125) and its
# console log is printed; it is never reported as a skip.
#
# Options:
#   --cache-dir DIR   where the initramfs is built and kept (default: $RXE_CACHE_DIR or
#                     /var/tmp/rdmarepl-rxe)
#   --work-dir DIR    writable directory shared with the guest (default: a new one under the
#                     cache dir, removed afterwards unless --keep)
#   --rw DIR          also share DIR writable at the same path (repeatable; e.g. a coverage
#                     build directory so .gcda files land on the host)
#   --env NAME=VALUE  exported in the guest before COMMAND runs (repeatable)
#   --timeout SECS    wall-clock limit for the whole VM run (default 300)
#   --mem MIB         guest memory (default 256; sanitizer builds want 1024)
#   --smp N           guest CPUs (default 1)
#   --mtu N           MTU of veth0/veth1 (default 1500: rxe active_mtu 1024)
#   --no-rdma         skip the rxe set-up (for harness self-tests)
#   --kernel-args S   appended to the guest kernel's command line (e.g. memmap=128M!512M,
#                     an emulated persistent-memory region for the WAL's DAX test)
#   --net-mcast A:P   multi-node: give the guest a virtio NIC (eth0) on the QEMU socket
#                     network multicast group A:P (every VM given the same group shares one
#                     Ethernet segment; nothing is configured on the host) and bind rxe0 to
#                     eth0 instead of the veth pair; needs --ip
#   --ip ADDR         the guest's eth0 address (a /24) with --net-mcast; it becomes
#                     RDMAREPL_RXE_ADDR. The MAC address is derived from it.
#   --keep            keep the work directory
#   --quiet-boot      print only the command's output, not the boot log, while running
set -euo pipefail

readonly kPackages=(qemu-system-x86 linux-image-amd64 busybox-static rdma-core ibverbs-utils
                    perftest iproute2)
# The modules the initramfs needs to mount the host over virtio-9p; their dependencies are
# resolved with modprobe --show-depends against the guest kernel's modules.dep.
readonly kInitModules=(virtio_pci 9pnet_virtio 9p)
readonly kHere="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

cache_dir="${RXE_CACHE_DIR:-/var/tmp/rdmarepl-rxe}"
work_dir=""
rw_dirs=()
envs=()
timeout_s=300
mem=256
smp=1
mtu=1500
rdma=1
keep=0
quiet_boot=0
net_mcast=""
net_ip=""
script=""
kernel_args=""

die() { echo "run-in-vm: $*" >&2; exit 125; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --cache-dir) cache_dir="$2"; shift 2 ;;
    --work-dir) work_dir="$2"; shift 2 ;;
    --rw) rw_dirs+=("$(realpath "$2")"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --smp) smp="$2"; shift 2 ;;
    --mtu) mtu="$2"; shift 2 ;;
    --no-rdma) rdma=0; shift ;;
    --kernel-args) kernel_args="$2"; shift 2 ;;
    --net-mcast) net_mcast="$2"; shift 2 ;;
    --ip) net_ip="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --quiet-boot) quiet_boot=1; shift ;;
    --script) script="$(realpath "$2")"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n "$script" || $# -gt 0 ]] || die "nothing to run: give --script FILE or -- COMMAND"
[[ -z "$net_mcast" || "$net_ip" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "--net-mcast needs --ip A.B.C.D (the guest's eth0 address)"

# ------------------------------------------------------------------ packages
ensure_packages() {
  local missing=0
  command -v qemu-system-x86_64 >/dev/null || missing=1
  compgen -G "/boot/vmlinuz-*" >/dev/null || missing=1
  [[ -x /bin/busybox ]] && /bin/busybox --list 2>/dev/null | grep -qx switch_root || missing=1
  command -v rdma >/dev/null || missing=1
  command -v ibv_devices >/dev/null || missing=1
  command -v ib_write_bw >/dev/null || missing=1
  command -v ip >/dev/null || missing=1
  [[ $missing -eq 0 ]] && return 0
  [[ $(id -u) -eq 0 ]] || die "packages missing (${kPackages[*]}) and not root to install them"
  echo "run-in-vm: installing ${kPackages[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${kPackages[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${kPackages[@]}" >&2; } ||
    die "apt-get install ${kPackages[*]} failed"
}

# The newest installed Debian kernel that ships rdma_rxe (the host may run another kernel).
pick_kernel() {
  local v best=""
  for d in /lib/modules/*; do
    v="$(basename "$d")"
    [[ -f "/boot/vmlinuz-$v" ]] || continue
    find "$d" -name 'rdma_rxe.ko*' -print -quit | grep -q . || continue
    if [[ -z "$best" ]] || [[ "$(printf '%s\n%s\n' "$best" "$v" | sort -V | tail -1)" == "$v" ]]; then
      best="$v"
    fi
  done
  [[ -n "$best" ]] || die "no /boot/vmlinuz-<ver> with rdma_rxe in /lib/modules/<ver>; install linux-image-amd64"
  echo "$best"
}

# ------------------------------------------------------------------ initramfs
# busybox-static plus the virtio/9p modules (decompressed, in dependency order) and an init
# that mounts the host root and switch_roots into it. Cached per kernel and per content of
# this script's init; rebuilt under a lock so concurrent runs do not race.
build_initramfs() {
  local ver="$1" out="$2"
  local stamp="$ver $(sha256sum "$kHere/initramfs-init.sh" | cut -c1-16)"
  if [[ -f "$out" && -f "$out.stamp" && "$(cat "$out.stamp")" == "$stamp" ]]; then return 0; fi
  local root; root="$(mktemp -d "$cache_dir/initramfs.XXXXXX")"
  mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
  cp /bin/busybox "$root/bin/busybox"
  [[ "$(ldd "$root/bin/busybox" 2>&1 || true)" == *"not a dynamic"* ]] ||
    die "/bin/busybox is not statically linked; install busybox-static"
  local order=() line ko name
  while read -r line; do
    [[ "$line" == insmod* ]] || continue
    ko="$(awk '{print $2}' <<<"$line")"
    name="$(basename "$ko")"; name="${name%%.ko*}"
    [[ " ${order[*]-} " == *" $name "* ]] && continue
    case "$ko" in
      *.ko.xz) xz -dc "$ko" >"$root/modules/$name.ko" ;;
      *.ko.zst) zstd -qdc "$ko" >"$root/modules/$name.ko" ;;
      *.ko.gz) gzip -dc "$ko" >"$root/modules/$name.ko" ;;
      *) cp "$ko" "$root/modules/$name.ko" ;;
    esac
    order+=("$name")
  done < <(for m in "${kInitModules[@]}"; do modprobe -S "$ver" --show-depends "$m"; done)
  printf '%s\n' "${order[@]}" >"$root/modules/order"
  cp "$kHere/initramfs-init.sh" "$root/init"
  chmod +x "$root/init"
  local archiver=(cpio)
  command -v cpio >/dev/null || archiver=(/bin/busybox cpio)
  (cd "$root" && find . | "${archiver[@]}" -o -H newc 2>/dev/null) | gzip -1 >"$out.tmp"
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.stamp"
  rm -rf "$root"
  echo "run-in-vm: built $out (kernel $ver; modules: ${order[*]})" >&2
}

# ------------------------------------------------------------------ main
ensure_packages
mkdir -p "$cache_dir"
cache_dir="$(realpath "$cache_dir")"
kver="$(pick_kernel)"
initrd="$cache_dir/initramfs-$kver.cpio.gz"
{
  flock 9
  build_initramfs "$kver" "$initrd"
} 9>"$cache_dir/.lock"

made_work=0
if [[ -z "$work_dir" ]]; then
  work_dir="$(mktemp -d "$cache_dir/work.XXXXXX")"
  made_work=1
fi
mkdir -p "$work_dir"
work_dir="$(realpath "$work_dir")"
console="$work_dir/console.log"
rm -f "$console" "$work_dir/exit-code"

# The command file the guest runs (bash, so the quoting of printf %q round-trips).
{
  echo "#!/bin/bash"
  for e in "${envs[@]}"; do printf 'export %q\n' "$e"; done
  if [[ -n "$script" ]]; then
    # A copy in the work directory: the script may live where the guest cannot see it
    # (the guest's /tmp is its own tmpfs).
    cp "$script" "$work_dir/script.sh"
    printf 'exec /bin/bash %q\n' "$work_dir/script.sh"
  else
    printf 'exec'; printf ' %q' "$@"; printf '\n'
  fi
} >"$work_dir/command.sh"

# The guest mounts a fresh tmpfs on /tmp, which would hide a checkout or build directory that
# lives under the host's /tmp: share the host's /tmp writable instead in that case.
case "$kHere/ $work_dir/ $*" in
  */tmp/*) if [[ " ${rw_dirs[*]} " != *" /tmp "* ]]; then rw_dirs+=(/tmp); fi ;;
esac

# The 9p shares: the host root (read-only) and the writable directories, mounted in the
# guest at their host paths. Tags are short (9p limits them to 31 bytes).
shares=(-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
        -virtfs "local,path=$work_dir,mount_tag=work,security_model=none,multidevs=remap")
rw_spec=""
i=0
for d in "${rw_dirs[@]}"; do
  shares+=(-virtfs "local,path=$d,mount_tag=rw$i,security_model=none,multidevs=remap")
  rw_spec+="rw$i:$d,"
  i=$((i + 1))
done

# no_timer_check: on a loaded host, TCG can miss the kernel's early IO-APIC timer check,
# which then panics ("IO-APIC + timer doesn't work").
# tsc=reliable clocksource=tsc: QEMU's default CPU model does not advertise an invariant TSC,
# so the guest kernel marks it unstable and falls back to the emulated HPET, on which every
# clock_gettime() traps into the emulator (~0.9 us against ~0.06 us on the TSC, measured in
# this VM). Real servers time from the TSC, and perftest reads it directly; without this the
# guest would charge rdmarepl a cost no deployment pays, once per record.
cmdline="console=ttyS0 panic=-1 quiet loglevel=4 no_timer_check tsc=reliable clocksource=tsc"
cmdline+=" rxe_work=$work_dir rxe_rw=$rw_spec"
cmdline+=" rxe_stage2=$kHere/guest-stage2.sh rxe_rdma=$rdma rxe_mtu=$mtu"
[[ -n "$kernel_args" ]] && cmdline+=" $kernel_args"

# Multi-node: a virtio NIC on a QEMU multicast socket network (unprivileged on the host).
net=()
if [[ -n "$net_mcast" ]]; then
  IFS=. read -r _ _ o3 o4 <<<"$net_ip"
  mac="$(printf '52:54:00:72:%02x:%02x' "$o3" "$o4")"
  net=(-netdev "socket,id=n0,mcast=$net_mcast,localaddr=127.0.0.1"
       -device "virtio-net-pci,netdev=n0,mac=$mac")
  cmdline+=" rxe_ip=$net_ip"
fi

filter=(cat)
[[ $quiet_boot -eq 1 ]] && filter=(sed -n '/rxe-guest: running/,$p')

run_vm() {
  set +e
  timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -m "$mem" -smp "$smp" \
    -nographic -no-reboot -nic none \
    -kernel "/boot/vmlinuz-$kver" -initrd "$initrd" -append "$cmdline" \
    "${shares[@]}" "${net[@]}" </dev/null 2>&1 | tr -d '\r' | tee "$console" | "${filter[@]}"
  qemu_rc=${PIPESTATUS[0]}
  set -e
}

start=$(date +%s)
run_vm
# A VM that died before the guest command started (a kernel panic in early boot on an
# overloaded host) is booted once more; a second failure is reported as a failure below.
if [[ $qemu_rc -ne 124 && $qemu_rc -ne 137 ]] && ! grep -q 'rxe-guest: running' "$console"; then
  echo "run-in-vm: the VM stopped before the guest command started; console log:" >&2
  cat "$console" >&2
  echo "run-in-vm: booting once more" >&2
  run_vm
fi
elapsed=$(($(date +%s) - start))

rc="$(sed -n 's/^.*RXE-EXIT-CODE: \([0-9][0-9]*\).*$/\1/p' "$console" | tail -1)"
if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
  echo "run-in-vm: FAILED: the VM did not finish within ${timeout_s}s (console log: $console)" >&2
  [[ $quiet_boot -eq 1 ]] && { echo "----- full console log -----" >&2; cat "$console" >&2; }
  rc=124
elif [[ -z "$rc" ]]; then
  echo "run-in-vm: FAILED: the VM stopped (qemu status $qemu_rc) without printing an exit code;" \
       "it did not boot or the guest set-up failed (console log: $console)" >&2
  [[ $quiet_boot -eq 1 ]] && { echo "----- full console log -----" >&2; cat "$console" >&2; }
  rc=125
else
  echo "run-in-vm: guest command exited with $rc after ${elapsed}s (kernel $kver)" >&2
fi

if [[ $made_work -eq 1 && $keep -eq 0 && $rc -eq 0 ]]; then rm -rf "$work_dir"; fi
exit "$rc"
