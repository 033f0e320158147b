// rdmarepl-bench --sweep: for each (value size, offered rate) cell, runs windows of the live
// cluster while a random walk moves the leader's knobs between settings, and writes one
// dataset row (docs/tuning.md, "Dataset format") per move: the last window's observation and
// knobs before it, the knobs applied, and what the --sweep-repeat windows under them measured.
// Rows with a window in which other processes kept a CPU busy are dropped and counted.
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "live_cluster.h"
#include "rdmarepl/tuning/dataset.h"
#include "sweep.h"

namespace rdmarepl::bench {

namespace {

// One step of the walk: 60% a single move of the kind the XGBoost tuner considers (a
// multiplicative knob x2 or /2, shards +-1, another polling mode), 40% a fresh random point
// (log-uniform for the multiplicative knobs).
tuning::Knobs next_knobs(const tuning::Knobs& cur, const tuning::KnobBounds& b,
                         std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  auto log_uniform = [&](const tuning::KnobRange& r) {
    const double lo = std::log(static_cast<double>(std::max<uint64_t>(r.min, 1)));
    const double hi = std::log(static_cast<double>(r.max));
    return r.snap(static_cast<uint64_t>(std::exp(lo + u(rng) * (hi - lo))));
  };
  tuning::Knobs k = cur;
  if (u(rng) < 0.6) {
    const bool up = u(rng) < 0.5;
    auto scale = [&](uint64_t v) { return up ? v * 2 : std::max<uint64_t>(v / 2, 1); };
    switch (rng() % 6) {
      case 0:
        k.batch_bytes = b.batch_bytes.snap(scale(k.batch_bytes));
        break;
      case 1:
        k.flush_delay_us = static_cast<uint32_t>(
            b.flush_delay_us.snap(k.flush_delay_us == 0 && up ? 10 : scale(k.flush_delay_us)));
        break;
      case 2:
        k.shards = static_cast<uint32_t>(b.shards.snap(up ? k.shards + 1 : k.shards - 1));
        break;
      case 3:
        k.poll_mode = static_cast<tuning::PollingMode>(rng() % tuning::kNumPollModes);
        break;
      case 4:
        k.poll_interval_us =
            static_cast<uint32_t>(b.poll_interval_us.snap(scale(k.poll_interval_us)));
        break;
      default:
        k.pool_bytes = b.pool_bytes.snap(scale(k.pool_bytes));
        break;
    }
  } else {
    k.batch_bytes = log_uniform(b.batch_bytes);
    k.flush_delay_us = static_cast<uint32_t>(u(rng) < 0.1 ? 0 : log_uniform(b.flush_delay_us));
    k.shards = static_cast<uint32_t>(b.shards.min + rng() % (b.shards.max - b.shards.min + 1));
    k.poll_mode = static_cast<tuning::PollingMode>(rng() % tuning::kNumPollModes);
    k.poll_interval_us = static_cast<uint32_t>(log_uniform(b.poll_interval_us));
    k.pool_bytes = log_uniform(b.pool_bytes);
  }
  return tuning::clamp(k, b);
}

}  // namespace

int run_sweep(const LiveArgs& args) {
  auto fail = [](const std::string& msg) {
    fmt::print(stderr, "rdmarepl-bench --sweep: {}\n", msg);
    return 2;
  };
  auto config = live_config(args);
  if (!config) return fail(config.error().message());
  const uint64_t window_ms = args.window_ms != 0 ? args.window_ms : 200;
  if (args.sweep_windows < 3) return fail("--sweep-windows must be >= 3");
  if (args.sweep_sizes.empty() || args.sweep_rates.empty())
    return fail("--sweep-values and --sweep-rates need at least one entry");
  const std::string& out = args.sweep_out;

  auto leader = live_leader_options(*config);
  const auto bounds = live_bounds(leader.shards, leader.retain_bytes);
  auto cluster = LiveCluster::start(*config, leader);
  if (!cluster) return fail(cluster.error().to_string());
  LiveCluster& c = **cluster;
  fmt::print(
      "sweep: {} value sizes x {} rates x {} settings x {} windows of {} ms, {} follower(s) "
      "over {}\n",
      args.sweep_sizes.size(), args.sweep_rates.size(), args.sweep_windows, args.sweep_repeat,
      window_ms, config->followers, c.channel().transport_name());

  std::mt19937_64 rng(args.seed);
  std::vector<tuning::Sample> rows;
  uint64_t dropped_total = 0;
  // A window in which other processes kept more than the allowed share of a CPU busy
  // measured the machine, not the knobs.
  const double max_foreign = static_cast<double>(args.sweep_max_foreign_cpu) / 100.0;
  const auto disturbed = [&](const LiveWindow& w) { return w.foreign_cpus > max_foreign; };
  const auto win = std::chrono::milliseconds(window_ms);
  for (const auto& [vmin, vmax] : args.sweep_sizes)
    for (uint64_t r : args.sweep_rates) {
      LiveWorkload w;
      w.offered_mb_s = static_cast<double>(r);
      w.value_min = vmin;
      w.value_max = vmax;
      const std::string v = vmin == vmax ? std::to_string(vmin) : fmt::format("{}-{}", vmin, vmax);
      c.set_workload(w);
      // The first window of a cell mixes two workloads: measured, then dropped.
      (void)c.measure(win);
      tuning::Knobs under = tuning::clamp(c.channel().knobs(), bounds);
      LiveWindow prev = c.measure(win);
      double mb = 0, p99 = 0;
      uint64_t kept = 0, dropped = 0;
      for (uint64_t i = 1; i < args.sweep_windows; ++i) {
        const tuning::Knobs want = next_knobs(under, bounds, rng);
        if (auto st = c.channel().apply_knobs(want); !st.ok()) return fail(st.error().message());
        const tuning::Knobs applied = tuning::clamp(c.channel().knobs(), bounds);
        // The setting's outcome: `sweep_repeat` windows under it, their mean throughput and
        // the p99 of all their latencies (what one window of that total length measures).
        bool clean = !disturbed(prev);
        metrics::Histogram::Snapshot lat;
        double bytes_per_s = 0;
        LiveWindow cur;
        for (uint64_t j = 0; j < args.sweep_repeat; ++j) {
          cur = c.measure(win);
          clean = clean && !disturbed(cur);
          lat.add(cur.latency_ns);
          bytes_per_s += cur.obs.bytes_per_s / static_cast<double>(args.sweep_repeat);
        }
        const tuning::Outcome outcome{bytes_per_s, static_cast<double>(lat.percentile(0.99)) / 1e3};
        if (clean) {
          rows.push_back(tuning::Sample{prev.obs, under, applied, outcome});
          mb += outcome.bytes_per_s / 1e6;
          p99 = std::max(p99, outcome.latency_p99_us);
          ++kept;
        } else {
          ++dropped;
        }
        prev = cur;
        under = applied;
      }
      dropped_total += dropped;
      fmt::print(
          "  value {:>9} B, offered {:>4} MB/s: mean {:7.2f} MB/s, worst p99 {:9.0f} us, "
          "{} rows, {} dropped (other processes busy)\n",
          v, r, kept > 0 ? mb / static_cast<double>(kept) : 0.0, p99, kept, dropped);
      std::fflush(stdout);
    }
  auto verified = c.finish(std::chrono::seconds(120));
  if (!verified) return fail("finishing the run: " + verified.error().to_string());
  if (auto st = tuning::write_dataset(out, rows); !st.ok()) return fail(st.error().message());
  fmt::print(
      "wrote {} rows to {} ({} dropped: other processes kept > {}% of a CPU busy); "
      "followers {}\n",
      rows.size(), out, dropped_total, args.sweep_max_foreign_cpu,
      *verified ? "verified (digests equal the leader's)" : "DIFFER from the leader");
  return *verified ? 0 : 1;
}

}  // namespace rdmarepl::bench
