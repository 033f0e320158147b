#!/usr/bin/env python3
"""The rows of rxe_table.sh: reads each run's files and prints one markdown row per run.

usage: rxe_table_rows.py PLAN SHARED_DIR OUT_DIR COMMAND_PREFIX

Writes OUT_DIR/table.md and OUT_DIR/table.json. Exit status 1 when a run failed: the client
exited non-zero or wrote no result, the result is not verified, no read was made, or a
follower served no read or did not stop cleanly.
"""
import json
import os
import re
import sys

HEADER = ("| column | workload | value | ops/s | read avg us | read p50 us | read p99 us | "
          "read p999 us | update p99 us | CPU us/op (3 processes) | reads served (f2 / f3) | "
          "verified |")


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def stopped(text):
    m = re.search(r"^STOPPED (.*)$", text, re.M)
    return dict(kv.split("=", 1) for kv in m.group(1).split()) if m else None


def main():
    plan, shared, out, prefix = sys.argv[1:5]
    rows, lines, failed = [], [HEADER, "|" + "---|" * 12], False
    for line in open(plan):
        rid, port, transport, tuning, workload, size, col = line.split()
        d = os.path.join(shared, rid)
        rc = read(os.path.join(d, "client.rc"), "missing").strip()
        result = read(os.path.join(d, "result.json"))
        followers = [stopped(read(os.path.join(d, f"follower-{n}.out"))) for n in (2, 3)]
        served = [int(f["read_keys"]) if f else None for f in followers]
        cmd = read(os.path.join(d, "command")).strip()
        row = {"id": rid, "column": col, "transport": transport, "tuning": tuning == "1",
               "workload": workload, "value_bytes": int(size), "client_rc": rc,
               "reads_served": served, "command": cmd}
        if rc != "0" or not result:
            err = read(os.path.join(d, "client.err")).strip().splitlines()[-3:]
            print(f"rxe_table: {rid} ({col}, {workload}, {size} B): client exit {rc}: "
                  f"{' / '.join(err)}", file=sys.stderr)
            for n in (2, 3):
                ferr = read(os.path.join(d, f"follower-{n}.err")).strip().splitlines()[-3:]
                if ferr:
                    print(f"rxe_table: {rid} follower {n}: {' / '.join(ferr)}", file=sys.stderr)
            lines.append(f"| {col} | {workload} | {size} | failed (exit {rc}) |" + " |" * 8)
            rows.append(row)
            failed = True
            continue
        j = json.loads(result)[0]
        row["result"] = j
        r = j["ops"].get("READ", {})
        u = j["ops"].get("UPDATE")
        ok = (j["verified"] and r.get("operations", 0) > 0 and
              all(s is not None and s > 0 for s in served))
        failed = failed or not ok
        fmt_served = " / ".join("-" if s is None else str(s) for s in served)
        cells = [col, workload, size, f"{j['throughput_ops']:.0f}"]
        cells += [f"{r.get(k, 0):.0f}" for k in ("avg_us", "p50_us", "p99_us", "p999_us")]
        cells.append(f"{u['p99_us']:.0f}" if u else "-")
        cells += [f"{j['cpu_us_per_op']:.0f}", fmt_served, str(j["verified"]).lower()]
        lines.append("| " + " | ".join(cells) + " |")
        rows.append(row)
    text = "\n".join(lines)
    print(text)
    print(f"\ntable: `{prefix}`; each row's client command (without --psk and --json) is in "
          f"OUT_DIR/table.json, \"command\":")
    for row in rows:
        print(f"  {row['id']}: `{row['command']}`")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "table.json"), "w") as f:
        json.dump(rows, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
