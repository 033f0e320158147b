#!/bin/bash
# Guest side of the rxe_wal_dax test (tests/rxe/CMakeLists.txt): the VM boots with
# memmap=128M!512M, an emulated persistent-memory region that nd_e820 turns into /dev/pmem0.
# An ext4 on it mounted with -o dax is a real DAX file system: the WAL's pmem tests run
# there WITHOUT PMEM_IS_PMEM_FORCE, and the writer must have chosen pmem by itself.
#   wal-dax.sh <wal_pmem_tests> <wal_pmem_nodax_tests>
set -euo pipefail
tests="$1"
nodax_tests="$2"
unset PMEM_IS_PMEM_FORCE

modprobe nd_e820
modprobe nd_pmem
for _ in $(seq 100); do [[ -b /dev/pmem0 ]] && break; sleep 0.1; done
[[ -b /dev/pmem0 ]] || { echo "wal-dax: no /dev/pmem0 (memmap= on the kernel command line?)"; exit 1; }
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkdir -p /tmp/pmem
mount -t ext4 -o dax /dev/pmem0 /tmp/pmem
grep " /tmp/pmem " /proc/mounts
export TMPDIR=/tmp/pmem

"$tests" --use-colour no 2>&1 | tee wal-dax.log
# Every writer that was not told to use the file backend chose pmem on its own, and the
# reason is the mapping, not the override.
grep -q "backend pmem (auto;" wal-dax.log || { echo "wal-dax: auto never chose pmem"; exit 1; }
if grep -q "backend file (auto" wal-dax.log; then echo "wal-dax: auto chose file on DAX"; exit 1; fi
# On DAX the no-DAX cases must see the directory as DAX and skip (they print why).
"$nodax_tests" --use-colour no 2>&1 | tee wal-nodax.log
grep -q "is on a DAX file system" wal-nodax.log || { echo "wal-dax: the DAX mount was not seen as DAX"; exit 1; }
echo "wal-dax: pmem tests passed on a real DAX file system"
