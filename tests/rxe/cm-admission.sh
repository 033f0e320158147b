#!/bin/bash
# Idle RDMA CM peers against a follower in RDMA CM mode (replication_adversarial_cm_tests,
# [cm_admission]): the idle peers connect from a second address of veth0, which this script
# adds (and waits for its RoCE v2 GID on rxe0), the real leader from the first.
#   cm-admission.sh TEST_BINARY
set -uo pipefail
binary="$1"
second=10.9.0.2
dev="$(ip -o -4 addr show | awk -v a="${RDMAREPL_RXE_ADDR:-10.9.0.1}" '$4 ~ "^"a"/" {print $2}')"
[[ -n "$dev" ]] || { echo "cm-admission: no interface holds ${RDMAREPL_RXE_ADDR:-10.9.0.1}"; exit 1; }
ip addr add "$second/24" dev "$dev" || { echo "cm-admission: ip addr add $second failed"; exit 1; }
gid="0000:0000:0000:0000:0000:ffff:0a09:0002"
for _ in $(seq 1 100); do
  grep -qs "$gid" /sys/class/infiniband/*/ports/1/gids/* && break
  sleep 0.1
done
grep -qs "$gid" /sys/class/infiniband/*/ports/1/gids/* ||
  { echo "cm-admission: the RoCE v2 GID of $second never appeared"; exit 1; }
RDMAREPL_RXE_ADDR2="$second" "$binary" --use-colour no '[cm_admission]'
