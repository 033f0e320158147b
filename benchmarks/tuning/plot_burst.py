#!/usr/bin/python3
"""Plots `rdmarepl-bench --burst`'s per-window p99 over the schedule, one line per strategy,
burst phases shaded and the SLO drawn, for one repeat and one workload. Needs matplotlib
(Debian: python3-matplotlib); not used by tests.

  benchmarks/tuning/plot_burst.py burst.csv docs/img/tuning_burst.png [--repeat 0]
      [--workload 1k] [--slo-us 20000] [--strategies static-default,xgboost,lstm,fixed-3]
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--repeat", default="0")
    ap.add_argument("--workload", default="1k")
    ap.add_argument("--slo-us", type=float, default=20000)
    ap.add_argument("--strategies", help="comma separated (default: all in the file)")
    a = ap.parse_args()
    keep = set(a.strategies.split(",")) if a.strategies else None
    series = defaultdict(list)  # strategy -> [(window index, p99 ms, phase)]
    with open(a.csv, newline="") as f:
        for row in csv.DictReader(f):
            if row["repeat"] != a.repeat or row["workload"] != a.workload:
                continue
            if keep and row["strategy"] not in keep:
                continue
            s = series[row["strategy"]]
            s.append((len(s), float(row["p99_us"]) / 1e3, row["phase"]))
    if not series:
        raise SystemExit(f"no rows for repeat {a.repeat}, workload {a.workload} in {a.csv}")
    fig, ax = plt.subplots(figsize=(11, 5.5))
    first = next(iter(series.values()))
    for i, _, phase in first:
        if phase == "burst":
            ax.axvspan(i - 0.5, i + 0.5, color="0.9", lw=0)
    for name, pts in sorted(series.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.5, label=name)
    ax.axhline(a.slo_us / 1e3, color="red", ls="--", lw=1, label="SLO")
    ax.set_yscale("log")
    ax.set_xlabel("window (shaded: burst at 1.5x the base load)")
    ax.set_ylabel("p99 commit latency per window (ms, log scale)")
    ax.set_title(f"burst experiment, {a.workload} values, repeat {a.repeat}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
