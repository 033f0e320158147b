#!/usr/bin/env python3
"""Draws the panels of docs/grafana/rdmarepl.json with matplotlib from the data a real
Prometheus returned for them (the file that tests/metrics/prometheus_server_test writes
when RDMAREPL_PANEL_DATA is set):

  RDMAREPL_PANEL_DATA=/tmp/panels.json ctest --test-dir build-test/release -L prometheus
  /usr/bin/python3 docs/grafana/render_panels.py /tmp/panels.json docs/grafana

One PNG per panel, named panel-<title>.png."""
import json
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def legend(fmt, metric):
    return re.sub(r"\{\{(\w+)\}\}", lambda m: metric.get(m.group(1), ""), fmt)


def series(panel, start):
    """(label, times relative to the run's start, values) of every series of a panel."""
    out = []
    for fmt, results in panel.items():
        for r in results:
            t = [float(v[0]) - start for v in r["values"]]
            y = [float(v[1]) for v in r["values"]]
            out.append((legend(fmt, r["metric"]), t, y))
    return out


def draw_heatmap(ax, rows):
    labels = [r[0] for r in rows]
    t0 = min(min(r[1]) for r in rows)
    t1 = max(max(r[1]) for r in rows)
    width = int(t1 - t0) + 1
    grid = [[float("nan")] * width for _ in rows]
    for i, (_, ts, ys) in enumerate(rows):
        for t, y in zip(ts, ys):
            grid[i][int(t - t0)] = y / 2**20
    im = ax.imshow(grid, aspect="auto", cmap="Oranges", interpolation="nearest",
                   extent=(t0, t1 + 1, len(rows), 0))
    ax.set_yticks([i + 0.5 for i in range(len(rows))], labels)
    plt.colorbar(im, ax=ax, label="MiB")


def draw(title, panel_def, data, start, out_dir):
    rows = series(data, start)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    if panel_def.get("type") == "heatmap":
        draw_heatmap(ax, rows)
    else:
        right = None
        for label, t, y in rows:
            on_right = re.search(r"latency|utilisation|connected", label)
            target = ax
            if on_right:
                right = right or ax.twinx()
                target = right
            target.plot(t, y, label=label, linestyle="--" if on_right else "-")
        handles, labels = ax.get_legend_handles_labels()
        if right is not None:
            h2, l2 = right.get_legend_handles_labels()
            handles, labels = handles + h2, labels + l2
            right.set_ylabel("seconds" if "latency" in " ".join(l2) else "")
        ax.legend(handles, labels, fontsize=7, loc="upper left")
        ax.set_ylabel(panel_def.get("fieldConfig", {}).get("defaults", {}).get("unit", ""))
    ax.set_xlabel("seconds since the run started")
    ax.set_title(title)
    fig.tight_layout()
    name = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    fig.savefig(f"{out_dir}/panel-{name}.png", dpi=80)
    plt.close(fig)


def main():
    data = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    dash = json.load(open(f"{out_dir}/rdmarepl.json"))
    for p in dash["panels"]:
        if p["title"] in data["panels"]:
            draw(p["title"], p, data["panels"][p["title"]], data["start"], out_dir)


if __name__ == "__main__":
    main()
