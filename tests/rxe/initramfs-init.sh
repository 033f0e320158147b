#!/bin/busybox sh
# /init of the test VM's initramfs (built by run-in-vm.sh): loads the virtio/9p modules,
# mounts the host's root read-only and the writable shares at their host paths, then
# switch_roots into the host root and runs the stage-2 script named on the kernel command
# line. switch_root (not chroot) matters: the kernel autoloads modules (the rxe link type,
# crc32) with /sbin/modprobe from the real root.
/bin/busybox --install -s /bin
export PATH=/bin

fail() {
  echo "rxe-init: $*"
  echo "RXE-INIT-FAILED"
  echo o >/proc/sysrq-trigger
  sleep 30
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
  insmod "/modules/$m.ko" || fail "insmod $m failed"
done

for p in $(cat /proc/cmdline); do
  case "$p" in
    rxe_*=*) export "$p" ;;
  esac
done

opts=trans=virtio,version=9p2000.L,msize=262144,cache=none
mount -t 9p -o "$opts,ro" host /newroot || fail "cannot mount the host root over 9p"
mount -t proc proc /newroot/proc || fail "mount proc"
mount -t sysfs sys /newroot/sys || fail "mount sys"
mount -t devtmpfs dev /newroot/dev || fail "mount dev"
mount -t tmpfs tmp /newroot/tmp || fail "mount /tmp"
mount -t tmpfs run /newroot/run || fail "mount /run"
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs shm /newroot/dev/shm
mount -t devpts pts /newroot/dev/pts
mkdir -p "/newroot$rxe_work" 2>/dev/null
mount -t 9p -o "$opts" work "/newroot$rxe_work" || fail "cannot mount the work share at $rxe_work"
IFS=,
for spec in $rxe_rw; do
  [ -n "$spec" ] || continue
  mkdir -p "/newroot${spec#*:}" 2>/dev/null
  mount -t 9p -o "$opts" "${spec%%:*}" "/newroot${spec#*:}" || fail "cannot mount $spec"
done
unset IFS

exec switch_root /newroot /bin/sh "$rxe_stage2"
fail "switch_root failed"
