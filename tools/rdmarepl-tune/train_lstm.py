#!/usr/bin/python3
"""Trains the LSTM tuner's model (src/tuning/lstm_model.cc) from tuning datasets.

The datasets are the CSV files of `rdmarepl-bench --sweep` (docs/tuning.md, "Dataset
format"). Each row becomes one training sequence: the windows of its run up to and including
it (the last --steps, left-padded with the oldest), and its candidate knobs; the target is
the next window's throughput and p99. A run ends where a row's knobs in force differ from the
previous row's candidate, the same rule as the library's evaluate_in_order().

Writes the model file (format: docs/tuning.md, "The LSTM model") and, with --predictions,
the model's predictions for every row of the held-out dataset, which the library's test
compares with its own forward pass. Training is deterministic for a given seed.

Needs PyTorch (Debian: python3-torch). The shipped model (docs/tuning.md, "The LSTM tuner"):
  /usr/bin/python3 tools/rdmarepl-tune/train_lstm.py \\
      --data models/sweep-tcp-idle.csv,models/sweep-verbs-rxe.csv,models/sweep-tcp-wal.csv \\
      --heldout models/sweep-tcp-wal-heldout.csv --out models/default_lstm_model.bin \\
      --predictions tests/tuning/data/lstm_heldout_predictions.csv
"""
import argparse
import csv
import math
import struct
import sys

import torch
from torch import nn

# The model's input columns in order (src/tuning/features.cc, docs/tuning.md); a model file
# records a checksum of them, and the library refuses a model whose list differs from its own.
KNOBS_NAMES = ["batch_bytes", "flush_delay_us", "shards", "poll_mode", "poll_interval_us",
               "pool_bytes"]
FEATURES = (["window_s", "lat_p50_us", "lat_p90_us", "lat_p99_us", "records_per_s",
             "bytes_per_s", "value_mean_bytes", "value_stddev_bytes", "queue_depth",
             "pending_bytes", "credit_stalls_per_s", "cpu_utilization", "membw_ratio",
             "reg_cache_hit_rate", "dev_tx_bytes_per_s", "dev_rx_bytes_per_s",
             "dev_tx_wait_per_s", "dev_retransmits_per_s", "dev_rnr_naks_per_s",
             "wal_sync_p99_us"] + ["cur_" + k for k in KNOBS_NAMES] + KNOBS_NAMES)
# Columns a dataset may lack (written before they existed): read as missing.
OPTIONAL = {"wal_sync_p99_us"}
KNOBS = len(KNOBS_NAMES)
N_FEATURES = len(FEATURES)
STEP_FEATURES = N_FEATURES - KNOBS  # a row without its candidate part
KNOBS_IN_FORCE = STEP_FEATURES - KNOBS  # where the knobs in force begin
POLL_MODES = {"busy": 0, "sleep": 1, "blocking": 2}
MAGIC = b"RDRLSTM1"
FORMAT_VERSION = 1


def crc32c(data: bytes) -> int:
    table = crc32c.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
        crc32c.table = table
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def read_dataset(path):
    """Rows of FEATURES (NaN for missing) and the two outcomes. Columns are found by name."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        col = {name: i for i, name in enumerate(header)}
        for name in FEATURES + ["out_bytes_per_s", "out_p99_us"]:
            if name not in col and name not in OPTIONAL:
                sys.exit(f"{path}: the header has no column {name!r} (docs/tuning.md)")
        rows, outs = [], []
        for line, cells in enumerate(reader, start=2):
            if not cells or cells[0].startswith("#"):
                continue  # blank and comment lines, as the library's reader skips them
            if len(cells) != len(header):
                sys.exit(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
            row = []
            for name in FEATURES:
                cell = cells[col[name]] if name in col else ""
                if name.endswith("poll_mode"):
                    if cell not in POLL_MODES:
                        sys.exit(f"{path}:{line}: unknown poll mode {cell!r}")
                    row.append(float(POLL_MODES[cell]))
                else:
                    row.append(float(cell) if cell not in ("", "nan") else math.nan)
            rows.append(row)
            outs.append([float(cells[col["out_bytes_per_s"]]), float(cells[col["out_p99_us"]])])
    return rows, outs


def log_features(rows):
    x = torch.tensor(rows, dtype=torch.float32)
    return torch.where(torch.isnan(x), x, torch.log1p(torch.clamp(x, min=0.0)))


def read_datasets(paths):
    """The rows of several datasets, in order, and the index at which each file begins."""
    rows, outs, starts = [], [], set()
    for path in paths:
        r, o = read_dataset(path)
        starts.add(len(rows))
        rows.extend(r)
        outs.extend(o)
    return rows, outs, starts


def sequences(rows, steps, starts=frozenset()):
    """Per row: indices of its last `steps` windows in its run, oldest first, left-padded. A
    run ends where the knobs in force are not the previous row's candidate, and at `starts`
    (where another dataset begins)."""
    out, start = [], 0
    for i, row in enumerate(rows):
        if i in starts or (i > 0 and
                           row[KNOBS_IN_FORCE:STEP_FEATURES] != rows[i - 1][STEP_FEATURES:]):
            start = i
        window = list(range(max(start, i - steps + 1), i + 1))
        out.append([window[0]] * (steps - len(window)) + window)
    return torch.tensor(out, dtype=torch.long)


class Model(nn.Module):
    def __init__(self, hidden, head):
        super().__init__()
        self.lstm = nn.LSTM(STEP_FEATURES, hidden, batch_first=True)
        self.fc1 = nn.Linear(hidden + 2 * KNOBS, head)
        self.fc2 = nn.Linear(head, 2)

    def forward(self, seq, cand):
        _, (h, _) = self.lstm(seq)
        now = seq[:, -1, KNOBS_IN_FORCE:STEP_FEATURES]
        z = torch.relu(self.fc1(torch.cat([h[0], cand, cand - now], dim=1)))
        return self.fc2(z)


def inputs(rows, steps, mean, dev, starts=frozenset()):
    """Standardised step sequences and candidates (NaN -> 0, the mean)."""
    x = (log_features(rows) - mean) / dev
    x = torch.nan_to_num(x, nan=0.0)
    seq = x[:, :STEP_FEATURES][sequences(rows, steps, starts)]
    kmean, kdev = mean[KNOBS_IN_FORCE:STEP_FEATURES], dev[KNOBS_IN_FORCE:STEP_FEATURES]
    cand = torch.nan_to_num((log_features(rows)[:, STEP_FEATURES:] - kmean) / kdev, nan=0.0)
    return seq, cand


def targets(outs):
    return torch.log1p(torch.tensor(outs, dtype=torch.float32))


def log_rmse(pred_log, truth_log):
    return torch.sqrt(torch.mean((pred_log - truth_log) ** 2, dim=0)).tolist()


def train(args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    rows, outs, starts = read_datasets(args.data.split(","))
    lx = log_features(rows)[:, :STEP_FEATURES]
    mean = torch.nanmean(lx, dim=0)
    mean = torch.nan_to_num(mean, nan=0.0)
    var = torch.nanmean((lx - mean) ** 2, dim=0)
    dev = torch.sqrt(torch.nan_to_num(var, nan=1.0))
    dev = torch.where(dev > 1e-6, dev, torch.ones_like(dev))
    mean = torch.cat([mean, torch.zeros(KNOBS)])  # only the step part is used
    dev = torch.cat([dev, torch.ones(KNOBS)])
    seq, cand = inputs(rows, args.steps, mean, dev, starts)
    y = targets(outs)
    out_mean, out_dev = y.mean(dim=0), y.std(dim=0)
    yn = (y - out_mean) / out_dev

    # Every fifth row is held back to choose the epoch; the rest trains.
    idx = torch.arange(len(rows))
    val = idx % 5 == 4
    model = Model(args.hidden, args.head)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    best, best_state = float("inf"), None
    for epoch in range(args.epochs):
        model.train()
        opt.zero_grad()
        loss = torch.mean((model(seq[~val], cand[~val]) - yn[~val]) ** 2)
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            v = torch.mean((model(seq[val], cand[val]) - yn[val]) ** 2).item()
        if v < best:
            best, best_state = v, {k: t.clone() for k, t in model.state_dict().items()}
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        fit = log_rmse(model(seq, cand) * out_dev + out_mean, y)
    print(f"train {args.data}: {len(rows)} rows, log1p RMSE throughput {fit[0]:.3f} "
          f"p99 {fit[1]:.3f} (validation loss {best:.3f})")
    return model, mean, dev, out_mean, out_dev


def save(path, model, mean, dev, out_mean, out_dev, hidden, steps, head):
    sd = model.state_dict()
    parts = [mean[:STEP_FEATURES], dev[:STEP_FEATURES], sd["lstm.weight_ih_l0"],
             sd["lstm.weight_hh_l0"], sd["lstm.bias_ih_l0"] + sd["lstm.bias_hh_l0"],
             sd["fc1.weight"], sd["fc1.bias"], sd["fc2.weight"], sd["fc2.bias"], out_mean,
             out_dev]
    floats = torch.cat([p.reshape(-1) for p in parts]).tolist()
    header = MAGIC + struct.pack(">9I", FORMAT_VERSION, STEP_FEATURES, hidden, steps,
                                 hidden + 2 * KNOBS, head,
                                 crc32c(",".join(FEATURES).encode()), 1, len(floats))
    body = header + struct.pack(f">{len(floats)}f", *floats)
    with open(path, "wb") as f:
        f.write(body + struct.pack(">I", crc32c(body)))
    print(f"wrote {path}: {len(body) + 4} bytes, {len(floats)} floats")


def heldout(args, model, mean, dev, out_mean, out_dev):
    rows, outs = read_dataset(args.heldout)
    seq, cand = inputs(rows, args.steps, mean, dev)
    with torch.no_grad():
        pred = model(seq, cand) * out_dev + out_mean
    err = log_rmse(pred, targets(outs))
    print(f"held out {args.heldout}: {len(rows)} rows, log1p RMSE throughput {err[0]:.3f} "
          f"p99 {err[1]:.3f}")
    if args.predictions:
        with open(args.predictions, "w") as f:
            f.write("bytes_per_s,p99_us\n")
            for p in torch.expm1(pred).tolist():
                f.write(f"{p[0]:.9g},{p[1]:.9g}\n")
        print(f"wrote {args.predictions}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True,
                    help="training dataset (CSV); several, comma separated, train together")
    ap.add_argument("--heldout", help="dataset to report the held-out error on")
    ap.add_argument("--out", required=True, help="model file to write")
    ap.add_argument("--predictions", help="with --heldout: write its predictions (CSV)")
    ap.add_argument("--steps", type=int, default=8, help="windows per sequence")
    ap.add_argument("--hidden", type=int, default=32, help="LSTM hidden size")
    ap.add_argument("--head", type=int, default=32, help="hidden size of the head")
    ap.add_argument("--epochs", type=int, default=600)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    model, mean, dev, out_mean, out_dev = train(args)
    save(args.out, model, mean, dev, out_mean, out_dev, args.hidden, args.steps,
         args.head)
    if args.heldout:
        heldout(args, model, mean, dev, out_mean, out_dev)


if __name__ == "__main__":
    main()
