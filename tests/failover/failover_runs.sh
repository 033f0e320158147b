#!/usr/bin/env bash
# Replica groups as separate processes with a real etcd: rdmarepl-bench --failovers kills
# the leader (SIGKILL) under writes, restarts it with its old log, and counts the
# acknowledged writes that the final leader lacks. Usage: failover_runs.sh BENCH ARGS...
set -euo pipefail
bench=$1; shift
if [[ ! -x /usr/bin/etcd ]]; then
  echo "SKIP: /usr/bin/etcd is not installed (Debian etcd-server; scripts/setup installs it)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bench" --quiet --json "$out/r.json" "$@"
python3 - "$out/r.json" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
args = sys.argv[2:]
n = int(args[args.index("--failovers") + 1])
ok = (d["acknowledged_lost"] == 0 and d["verified"] and d["converged"]
      and len(d["failover_ms"]["samples"]) == n and d["acknowledged_writes"] > 0)
print(f"failovers {n}: p50 {d['failover_ms']['p50']:.0f} ms, max {d['failover_ms']['max']:.0f} ms, "
      f"{d['acknowledged_writes']} acknowledged, {d['acknowledged_lost']} lost")
sys.exit(0 if ok else 1)
PY
