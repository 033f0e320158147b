#!/usr/bin/python3
"""Plots `rdmarepl-bench --shift`: per window, the model's prediction error (|log1p predicted
- log1p measured|, throughput and p99) and the window p99, for the online and the frozen
tuner, as medians over the repeats with a rolling mean; the move of the environment is
marked. Needs matplotlib (Debian: python3-matplotlib); not used by tests.

  benchmarks/tuning/plot_shift.py shift.csv docs/img/tuning_shift.png [--slo-us 20000]
      [--smooth 10]
"""
import argparse
import csv
import math
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rolling(v, k):
    out = []
    for i in range(len(v)):
        w = [x for x in v[max(0, i - k + 1):i + 1] if not math.isnan(x)]
        out.append(sum(w) / len(w) if w else math.nan)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--slo-us", type=float, default=20000)
    ap.add_argument("--smooth", type=int, default=10, help="rolling mean over N windows")
    a = ap.parse_args()
    # strategy -> window -> [values over repeats]
    tp_err = defaultdict(lambda: defaultdict(list))
    p99_err = defaultdict(lambda: defaultdict(list))
    p99 = defaultdict(lambda: defaultdict(list))
    shift_at = None
    with open(a.csv, newline="") as f:
        for row in csv.DictReader(f):
            s, w = row["strategy"], int(row["window"])
            if row["shifted"] == "1" and (shift_at is None or w < shift_at):
                shift_at = w
            p99[s][w].append(float(row["p99_us"]) / 1e3)
            pt, pp = float(row["pred_bytes_per_s"]), float(row["pred_p99_us"])
            if math.isnan(pt):
                continue
            mt, mp = float(row["meas_bytes_per_s"]), float(row["meas_p99_us"])
            tp_err[s][w].append(abs(math.log1p(pt) - math.log1p(mt)))
            p99_err[s][w].append(abs(math.log1p(pp) - math.log1p(mp)))
    if not p99:
        raise SystemExit(f"no rows in {a.csv}")
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    panels = [(tp_err, "throughput error\n|log1p pred - log1p meas|", False),
              (p99_err, "p99 error\n|log1p pred - log1p meas|", False),
              (p99, "window p99 (ms, log)", True)]
    for ax, (data, label, log) in zip(axes, panels):
        for s in sorted(data):
            ws = sorted(data[s])
            med = [statistics.median(data[s][w]) for w in ws]
            ax.plot(ws, rolling(med, a.smooth), lw=1.6, label=s)
        if shift_at is not None:
            ax.axvline(shift_at - 0.5, color="black", ls=":", lw=1.2)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if log:
            ax.set_yscale("log")
            ax.axhline(a.slo_us / 1e3, color="red", ls="--", lw=1, label="SLO")
        ax.legend(loc="upper left")
    axes[-1].set_xlabel(f"window (dotted: the follower limited by a cgroup CPU quota; "
                        f"medians over repeats, rolling mean of {a.smooth})")
    axes[0].set_title("online learning after the environment moves")
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
