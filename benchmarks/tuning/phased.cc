// rdmarepl-bench --phased: the phased evaluation of the tuners (docs/benchmarks.md, "Tuning:
// phased evaluation"). Four phases of an open-loop workload on the live cluster:
//   1 steady-1k    L MB/s of 1 KiB values
//   2 load+50%     1.5 L MB/s of 1 KiB values
//   3 values-16k   1.5 L MB/s of 16 KiB values
//   4 mixed        1.5 L MB/s of values uniform in 64 B .. 16 KiB
// run under: static-default (the channel's default knobs), best-static (for each phase the
// best setting of a grid, each run alone on that phase: best in hindsight), heuristic,
// xgboost (the channel's default tuner; --model replaces its model) and lstm. Per phase: throughput
// and commit-latency p50/p99/p999; per window: a CSV for the plot
// (benchmarks/tuning/plot_phases.sh).
#include <fmt/format.h>

#include <fstream>

#include "live_cluster.h"
#include "rdmarepl/core/clock.h"
#include "sweep.h"

namespace rdmarepl::bench {

namespace {

struct Phase {
  std::string name;
  LiveWorkload workload;
};

struct PhaseResult {
  double seconds = 0;
  uint64_t bytes = 0;
  metrics::Histogram::Snapshot latency;
  void add(const LiveWindow& w, double window_s) {
    seconds += window_s;
    bytes += w.bytes;
    for (size_t i = 0; i < latency.buckets.size(); ++i)
      latency.buckets[i] += w.latency_ns.buckets[i];
    latency.count += w.latency_ns.count;
    latency.sum += w.latency_ns.sum;
    latency.max = std::max(latency.max, w.latency_ns.max);
  }
  [[nodiscard]] double mb_s() const {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0;
  }
  [[nodiscard]] double us(double q) const {
    return static_cast<double>(latency.percentile(q)) / 1e3;
  }
};

struct StrategyRun {
  std::string name;
  std::vector<PhaseResult> phases;
  std::vector<std::string> knobs;  // the setting of best-static per phase
  bool verified = false;
};

std::vector<Phase> phases_for(double l) {
  std::vector<Phase> p(4);
  p[0] = {"steady-1k", {l, 1024, 1024}};
  p[1] = {"load+50%", {1.5 * l, 1024, 1024}};
  p[2] = {"values-16k", {1.5 * l, 16384, 16384}};
  p[3] = {"mixed", {1.5 * l, 64, 16384}};
  return p;
}

// Runs every phase on one cluster, `windows` windows each; writes each window to `csv`.
Result<StrategyRun> run_phases(const std::string& name, const kvdemo::RunConfig& config,
                               replication::ChannelOptions leader, const std::vector<Phase>& phases,
                               uint64_t windows, uint64_t warmup, std::chrono::milliseconds win,
                               std::ofstream& csv, double& t_offset) {
  auto cluster = LiveCluster::start(config, leader);
  if (!cluster) return std::move(cluster).error();
  LiveCluster& c = **cluster;
  StrategyRun run;
  run.name = name;
  const double ws = static_cast<double>(win.count()) / 1e3;
  double t = 0;
  // Warm-up at phase 1's load, not measured: first-touch page faults of the windows and
  // rings, connection start, and the tuners' first decisions.
  c.set_workload(phases[0].workload);
  for (uint64_t i = 0; i < warmup; ++i) (void)c.measure(win);
  for (size_t p = 0; p < phases.size(); ++p) {
    c.set_workload(phases[p].workload);
    PhaseResult r;
    for (uint64_t i = 0; i < windows; ++i) {
      LiveWindow w = c.measure(win);
      r.add(w, ws);
      t += ws;
      csv << fmt::format("{},{},{},{:.3f},{:.1f},{:.1f},{:.3f},{}\n", name, p + 1, phases[p].name,
                         t_offset + t, static_cast<double>(w.latency_ns.percentile(0.5)) / 1e3,
                         static_cast<double>(w.latency_ns.percentile(0.99)) / 1e3,
                         static_cast<double>(w.bytes) / ws / 1e6, tuning::to_string(w.knobs));
    }
    run.phases.push_back(r);
  }
  auto v = c.finish(std::chrono::seconds(120));
  if (!v) return std::move(v).error();
  run.verified = *v;
  return run;
}

}  // namespace

int run_phased(const LiveArgs& args) {
  auto fail = [](const std::string& msg) {
    fmt::print(stderr, "rdmarepl-bench --phased: {}\n", msg);
    return 2;
  };
  auto config = live_config(args);
  if (!config) return fail(config.error().message());
  const uint64_t window_ms = args.window_ms != 0 ? args.window_ms : 250;
  if (args.rate == 0 || args.phase_windows == 0 || args.tuner_period_ms == 0)
    return fail("--rate, --phase-windows and --tuner-period-ms must be positive");
  const std::string& csv_path = args.phased_csv;
  const std::string& model = args.model;
  std::ofstream csv(csv_path);
  csv << "strategy,phase,phase_name,t_s,p50_us,p99_us,mb_s,knobs\n";

  const auto phases = phases_for(static_cast<double>(args.rate));
  const auto win = std::chrono::milliseconds(window_ms);
  const auto base = live_leader_options(*config);
  const auto bounds = live_bounds(base.shards, base.retain_bytes);
  std::vector<StrategyRun> runs;
  double t_off = 0;

  // static-default: the channel's defaults, never moved.
  {
    auto o = base;
    replication::ChannelOptions defaults;
    o.polling = defaults.polling;
    o.batch_bytes = defaults.batch_bytes;
    o.flush_delay = defaults.flush_delay;
    o.poll_interval = defaults.poll_interval;
    fmt::print("static-default ...\n");
    std::fflush(stdout);
    auto r = run_phases("static-default", *config, o, phases, args.phase_windows,
                        args.warmup_windows, win, csv, t_off);
    if (!r) return fail(r.error().to_string());
    runs.push_back(*r);
  }
  // The tuners.
  for (const std::string tuner : {"heuristic", "xgboost", "lstm"}) {
    auto o = base;
    o.tuning.enabled = true;
    o.tuning.tuner = tuner;
    o.tuning.bounds = bounds;
    o.tuning.period = std::chrono::milliseconds(args.tuner_period_ms);
    o.tuning.latency_target_p99_us = static_cast<double>(args.latency_target_us);
    if (!model.empty() && tuner == "xgboost") o.tuning.model.model_path = model;
    fmt::print("{} ...\n", tuner);
    std::fflush(stdout);
    auto r = run_phases(tuner, *config, o, phases, args.phase_windows, args.warmup_windows, win,
                        csv, t_off);
    if (!r) return fail(r.error().to_string());
    runs.push_back(*r);
  }
  // best-static: every grid setting on every phase, alone; the best (highest throughput,
  // within 2% the lowest p99) per phase. Its plot line is the winning runs, one per phase.
  {
    StrategyRun best;
    best.name = "best-static";
    best.verified = true;
    tuning::Knobs k0;
    k0.shards = 1;
    k0.pool_bytes = bounds.pool_bytes.max;
    k0.poll_interval_us = 50;
    const auto grid = static_grid(k0);
    for (size_t p = 0; p < phases.size(); ++p) {
      fmt::print("best-static, phase {} ({} settings) ...\n", phases[p].name, grid.size());
      std::fflush(stdout);
      auto cluster = LiveCluster::start(*config, base);
      if (!cluster) return fail(cluster.error().to_string());
      LiveCluster& c = **cluster;
      c.set_workload(phases[p].workload);
      for (uint64_t i = 0; i < args.warmup_windows; ++i) (void)c.measure(win);
      PhaseResult winner;
      std::string winner_knobs;
      const double ws = static_cast<double>(win.count()) / 1e3;
      for (const auto& k : grid) {
        if (auto st = c.channel().apply_knobs(k); !st.ok()) return fail(st.error().message());
        (void)c.measure(win);  // settle
        PhaseResult r;
        for (uint64_t i = 0; i < args.grid_windows; ++i) r.add(c.measure(win), ws);
        const bool better = winner.seconds == 0 || r.mb_s() > winner.mb_s() * 1.02 ||
                            (r.mb_s() >= winner.mb_s() * 0.98 && r.us(0.99) < winner.us(0.99));
        if (better) {
          winner = r;
          winner_knobs = tuning::to_string(c.channel().knobs());
        }
      }
      auto v = c.finish(std::chrono::seconds(120));
      if (!v) return fail(v.error().to_string());
      best.verified = best.verified && *v;
      best.phases.push_back(winner);
      best.knobs.push_back(winner_knobs);
    }
    runs.push_back(best);
  }

  // Table.
  fmt::print("\nphases: L = {} MB/s offered; {} windows of {} ms per phase\n", args.rate,
             args.phase_windows, window_ms);
  fmt::print("{:<15} {:<11} {:>8} {:>10} {:>10} {:>10}  {}\n", "strategy", "phase", "MB/s",
             "p50 us", "p99 us", "p999 us", "setting (best-static)");
  for (const auto& r : runs) {
    double bytes = 0, secs = 0;
    for (size_t p = 0; p < r.phases.size(); ++p) {
      const auto& ph = r.phases[p];
      bytes += static_cast<double>(ph.bytes);
      secs += ph.seconds;
      fmt::print("{:<15} {:<11} {:>8.2f} {:>10.0f} {:>10.0f} {:>10.0f}  {}\n", r.name,
                 phases[p].name, ph.mb_s(), ph.us(0.5), ph.us(0.99), ph.us(0.999),
                 p < r.knobs.size() ? r.knobs[p] : "");
    }
    fmt::print("{:<15} {:<11} {:>8.2f}   (verified: {})\n", r.name, "overall",
               secs > 0 ? bytes / secs / 1e6 : 0, r.verified ? "yes" : "NO");
  }
  const auto overall = [](const StrategyRun& r) {
    double b = 0, s = 0;
    for (const auto& p : r.phases) {
      b += static_cast<double>(p.bytes);
      s += p.seconds;
    }
    return s > 0 ? b / s : 0;
  };
  const auto& def = runs[0];
  const auto& best = runs.back();
  for (size_t i = 1; i + 1 < runs.size(); ++i) {
    fmt::print(
        "{}: overall throughput {:.2f}x static-default (target 1.2x); p99 / best-static p99 per "
        "phase:",
        runs[i].name, overall(runs[i]) / overall(def));
    for (size_t p = 0; p < phases.size(); ++p)
      fmt::print(" {:.2f}", runs[i].phases[p].us(0.99) / std::max(best.phases[p].us(0.99), 1e-9));
    fmt::print(" (target <= 1.10)\n");
  }
  fmt::print("per-window CSV: {}\n", csv_path);
  bool all = true;
  for (const auto& r : runs) all = all && r.verified;
  return all ? 0 : 1;
}

}  // namespace rdmarepl::bench
