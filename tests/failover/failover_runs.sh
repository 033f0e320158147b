#!/usr/bin/env bash
# Replica groups as separate processes with a real etcd: rdmarepl-bench --failovers injects
# a fault (kill -9 or SIGSTOP of the leader, kill -9 of a follower) under writes, brings
# the member back with its old log, and checks that nothing acknowledged was lost, that a
# stopped leader acknowledged nothing once it ran again, and that the client's history is
# linearizable: by the bench's own checker and, from the Porcupine events it writes, by
# check_history.py. Usage: failover_runs.sh BENCH ARGS...
set -euo pipefail
bench=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x /usr/bin/etcd ]]; then
  echo "SKIP: /usr/bin/etcd is not installed (Debian etcd-server; scripts/setup installs it)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bench" --quiet --json "$out/r.json" --history "$out/history.json" "$@"
python3 - "$out/r.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
args = sys.argv[2:]
n = int(args[args.index("--failovers") + 1])
lin = d["linearizable"]
ok = (d["acknowledged_lost"] == 0 and d["verified"] and d["converged"]
      and d["stale_acknowledged"] == 0 and d["epoch_conflicts"] == 0 and lin["ok"]
      and lin["reads"] > 0 and len(d["failover_ms"]["samples"]) == n
      and d["acknowledged_writes"] > 0
      and (d["etcd_member_killed"] or "--etcd-members" not in args))
print(f"{n} x {d['fault']}: p50 {d['failover_ms']['p50']:.0f} ms, max "
      f"{d['failover_ms']['max']:.0f} ms, {d['acknowledged_writes']} acknowledged, "
      f"{d['acknowledged_lost']} lost, {d['stale_acknowledged']} stale, "
      f"linearizable: {lin['ok']} ({lin['operations']} operations) {lin['explanation']}")
sys.exit(0 if ok else 1)
PY
python3 "$here/check_history.py" "$out/history.json"
