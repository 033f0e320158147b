#!/usr/bin/python3
"""Plots rxe_table.sh's table.json: per workload, throughput and read p99 by value size, one
bar per column (tcp, verbs, verbs+tuning). With several table.json files (repeated runs) a
bar is their mean and each run is a dot. Needs matplotlib (Debian: python3-matplotlib); not
used by tests.

  benchmarks/ycsb/plot_rxe_table.py docs/img/ycsb_rxe_table.png OUT_DIR/table.json [...]
"""
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [r for path in sys.argv[2:] for r in json.load(open(path)) if "result" in r]
    workloads = sorted({r["workload"] for r in rows}, key="CABDF".index)
    columns = list(dict.fromkeys(r["column"] for r in rows))
    sizes = sorted({r["value_bytes"] for r in rows})
    cell = defaultdict(lambda: defaultdict(list))  # (workload, column) -> size -> [result]
    for r in rows:
        cell[(r["workload"], r["column"])][r["value_bytes"]].append(r["result"])
    fig, axes = plt.subplots(2, len(workloads), figsize=(5 * len(workloads), 6.5), squeeze=False)
    width = 0.8 / max(1, len(columns))
    metrics = [("ops/s", lambda j: j["throughput_ops"]),
               ("read p99 (ms)", lambda j: j["ops"]["READ"]["p99_us"] / 1e3)]
    for wi, w in enumerate(workloads):
        for mi, (label, get) in enumerate(metrics):
            ax = axes[mi][wi]
            for ci, c in enumerate(columns):
                xs, ys, dots = [], [], []
                for si, size in enumerate(sizes):
                    runs = cell[(w, c)].get(size)
                    if runs:
                        x = si + (ci - (len(columns) - 1) / 2) * width
                        vals = [get(j) for j in runs]
                        xs.append(x)
                        ys.append(sum(vals) / len(vals))
                        dots += [(x, v) for v in vals]
                ax.bar(xs, ys, width, label=c)
                if len(sys.argv) > 3:
                    ax.plot([d[0] for d in dots], [d[1] for d in dots], "k.", markersize=4)
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([f"{s // 1024} KiB" for s in sizes])
            ax.set_ylabel(label)
            ax.set_title(f"workload {w}: {label}")
            ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend()
    fig.suptitle("YCSB across three Soft-RoCE VMs (TCG, 2 shared host cores): shape only")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=90)


if __name__ == "__main__":
    main()
