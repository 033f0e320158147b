// rdmarepl-bench --shift: online learning under a moved environment (docs/benchmarks.md,
// "Tuning: online learning after the environment moves"). A live cluster carries a fixed
// open-loop load (--rate MB/s, 1 KiB values) with the XGBoost tuner in charge. After
// --phase-windows windows as the shipped model was trained, the follower process is limited
// to --shift-cpu % of one CPU (a cgroup CPU quota, cpu_limit.h) for --shift-windows windows:
// an environment the training sweep never saw. Two strategies, each on a fresh cluster,
// interleaved over --repeats:
//   online   the tuner learns from live samples, its model refreshed every --shift-refresh
//   frozen   the same tuner and model, online learning off
// Per window: what the model predicted for it when the knobs were chosen, what was measured,
// the knobs. Per block of --shift-block windows: the model's error (RMSE of log1p, as in
// docs/tuning.md), the median window p99, the share of windows over the SLO and the
// throughput, as medians over the repeats. Per window: a CSV for plot_shift.py.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "cpu_limit.h"
#include "live_cluster.h"
#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/runner.h"
#include "rdmarepl/tuning/xgboost_tuner.h"
#include "sweep.h"

namespace rdmarepl::bench {

namespace {

// The XGBoost tuner, with the prediction of each sample recorded before the tuner learns
// from it: the model in use then is the one that chose the sample's knobs.
class RecordingTuner final : public tuning::Tuner {
 public:
  explicit RecordingTuner(std::unique_ptr<tuning::XgboostTuner> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "recording"; }
  tuning::Knobs decide(const tuning::Observation& o) override { return inner_->decide(o); }
  void learn(const tuning::Sample& s) override {
    last_ = std::nullopt;
    if (const auto* m = inner_->model()) {
      std::array<float, tuning::kNumFeatures> row{};
      tuning::encode_features(s.observation, s.observed_under, s.knobs, row.data());
      tuning::Prediction p;
      if (m->predict(row.data(), 1, &p).ok()) last_ = p;
    }
    last_outcome_ = s.outcome;
    inner_->learn(s);
  }
  [[nodiscard]] const std::optional<tuning::Prediction>& last_prediction() const { return last_; }
  [[nodiscard]] const tuning::Outcome& last_outcome() const { return last_outcome_; }
  [[nodiscard]] uint64_t model_version() const { return inner_->model_version(); }

 private:
  std::unique_ptr<tuning::XgboostTuner> inner_;
  std::optional<tuning::Prediction> last_;
  tuning::Outcome last_outcome_;
};

struct Window {
  bool shifted = false;
  double p99_us = 0, mb_s = 0;
  double pred_tp = NAN, pred_p99 = NAN;  // the model's, for this window's knobs
  double meas_tp = 0, meas_p99 = 0;      // what the tuner learnt from (the channel's window)
  uint64_t model_version = 0;
};

struct Block {
  double tp_err = 0, p99_err = 0;  // RMSE of log1p
  double p99_med = 0, over_slo = 0, mb_s = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

Block summarise(const std::vector<Window>& ws, double slo_us) {
  Block b;
  double etp = 0, ep99 = 0, mb = 0;
  size_t n = 0, over = 0;
  std::vector<double> p99s;
  for (const auto& w : ws) {
    if (!std::isnan(w.pred_tp)) {
      etp += std::pow(std::log1p(w.pred_tp) - std::log1p(w.meas_tp), 2);
      ep99 += std::pow(std::log1p(w.pred_p99) - std::log1p(w.meas_p99), 2);
      ++n;
    }
    p99s.push_back(w.p99_us);
    mb += w.mb_s;
    if (w.p99_us > slo_us) ++over;
  }
  b.tp_err = n > 0 ? std::sqrt(etp / static_cast<double>(n)) : NAN;
  b.p99_err = n > 0 ? std::sqrt(ep99 / static_cast<double>(n)) : NAN;
  b.p99_med = median(p99s);
  b.over_slo = ws.empty() ? 0 : static_cast<double>(over) / static_cast<double>(ws.size());
  b.mb_s = ws.empty() ? 0 : mb / static_cast<double>(ws.size());
  return b;
}

struct Run {
  std::vector<Window> windows;
  bool verified = false;
};

Result<Run> run_one(const kvdemo::RunConfig& config, const LiveArgs& args, bool online,
                    std::ofstream& csv, uint32_t repeat) {
  const auto base = live_leader_options(config);
  const auto bounds = live_bounds(base.shards, base.retain_bytes);
  auto cluster = LiveCluster::start(config, base);
  if (!cluster) return std::move(cluster).error();
  LiveCluster& c = **cluster;
  const auto win = std::chrono::milliseconds(args.window_ms != 0 ? args.window_ms : 250);
  const double ws = static_cast<double>(win.count()) / 1e3;

  tuning::ModelTunerOptions mo;
  mo.model_path = args.model;
  mo.refresh_every = online ? args.shift_refresh : 0;
  const tuning::Knobs initial = tuning::clamp(c.channel().knobs(), bounds);
  auto inner = std::make_unique<tuning::XgboostTuner>(
      initial, bounds, static_cast<double>(args.latency_target_us), mo);
  if (!inner->has_model())
    return Error(Errc::not_found, "the XGBoost model did not load: " +
                                      (inner->last_error() ? inner->last_error()->message()
                                                           : std::string("no reason given")));
  auto* rec = new RecordingTuner(std::move(inner));
  tuning::Observation last_obs;
  auto runner = tuning::TunerRunner::create(
      std::unique_ptr<tuning::Tuner>(rec), bounds, initial, [&] { return last_obs; },
      [&](const tuning::Knobs& k) { (void)c.channel().apply_knobs(k); },
      tuning::RunnerOptions{win, true});
  if (!runner) return std::move(runner).error();

  LiveWorkload wl;
  wl.offered_mb_s = static_cast<double>(args.rate);
  c.set_workload(wl);
  for (uint64_t i = 0; i < args.warmup_windows; ++i) {
    last_obs = c.measure(win).obs;
    (*runner)->tick();
  }
  Run run;
  std::unique_ptr<CpuLimit> limit;
  const uint64_t total = args.phase_windows + args.shift_windows;
  for (uint64_t i = 0; i < total; ++i) {
    if (i == args.phase_windows) {
      auto l = CpuLimit::create(c.follower_pids().at(0), args.shift_cpu);
      if (!l) return std::move(l).error();
      limit = std::move(*l);
    }
    const LiveWindow w = c.measure(win);
    last_obs = w.obs;
    (*runner)->tick();  // learns (window before, this window), then decides the next knobs
    Window x;
    x.shifted = i >= args.phase_windows;
    x.p99_us = static_cast<double>(w.latency_ns.percentile(0.99)) / 1e3;
    x.mb_s = static_cast<double>(w.bytes) / ws / 1e6;
    x.model_version = rec->model_version();
    if (const auto& p = rec->last_prediction(); p && i > 0) {
      x.pred_tp = p->bytes_per_s;
      x.pred_p99 = p->latency_p99_us;
      x.meas_tp = rec->last_outcome().bytes_per_s;
      x.meas_p99 = rec->last_outcome().latency_p99_us;
    }
    run.windows.push_back(x);
    csv << fmt::format("{},{},{},{},{:.1f},{:.3f},{:.0f},{:.1f},{:.0f},{:.1f},{},{}\n", repeat,
                       online ? "online" : "frozen", i, x.shifted ? 1 : 0, x.p99_us, x.mb_s,
                       x.pred_tp, x.pred_p99, x.meas_tp, x.meas_p99, x.model_version,
                       tuning::to_string(w.knobs));
  }
  limit.reset();
  auto v = c.finish(std::chrono::seconds(120));
  if (!v) return std::move(v).error();
  run.verified = *v;
  return run;
}

}  // namespace

int run_shift(const LiveArgs& args) {
  auto fail = [](const std::string& msg) {
    fmt::print(stderr, "rdmarepl-bench --shift: {}\n", msg);
    return 2;
  };
  auto config = live_config(args);
  if (!config) return fail(config.error().message());
  if (args.rate == 0 || args.phase_windows == 0 || args.shift_windows == 0 || args.repeats == 0 ||
      args.shift_block == 0 || args.shift_refresh == 0)
    return fail(
        "--rate, --phase-windows, --shift-windows, --shift-block, --shift-refresh and "
        "--repeats must be positive");
  std::ofstream csv(args.shift_csv);
  csv << "repeat,strategy,window,shifted,p99_us,mb_s,pred_bytes_per_s,pred_p99_us,"
         "meas_bytes_per_s,meas_p99_us,model_version,knobs\n";
  const double slo = static_cast<double>(args.latency_target_us);
  // Per strategy, per block: the block's summary in each repeat.
  std::map<std::string, std::vector<std::vector<Block>>> blocks;
  bool verified = true;
  for (uint32_t r = 0; r < args.repeats; ++r)
    for (int k = 0; k < 2; ++k) {
      const bool online = ((k + r) % 2) == 0;  // alternate which strategy goes first
      const std::string name = online ? "online" : "frozen";
      fmt::print("repeat {}: {} ...\n", r + 1, name);
      std::fflush(stdout);
      auto run = run_one(*config, args, online, csv, r);
      if (!run) return fail(run.error().to_string());
      verified = verified && run->verified;
      auto& per = blocks[name];
      for (size_t b = 0, i = 0; i < run->windows.size(); ++b, i += args.shift_block) {
        const auto end = std::min(run->windows.size(), i + args.shift_block);
        if (per.size() <= b) per.resize(b + 1);
        per[b].push_back(
            summarise(std::vector<Window>(run->windows.begin() + static_cast<std::ptrdiff_t>(i),
                                          run->windows.begin() + static_cast<std::ptrdiff_t>(end)),
                      slo));
      }
    }
  const uint64_t window_ms = args.window_ms != 0 ? args.window_ms : 250;
  fmt::print(
      "\nshift: {} MB/s of 1 KiB values; {} windows of {} ms, then the follower limited to {}% "
      "of a CPU for {} windows; online refresh every {} samples; SLO p99 {} us; medians over "
      "{} repeats, per block of {} windows\n",
      args.rate, args.phase_windows, window_ms, args.shift_cpu, args.shift_windows,
      args.shift_refresh, args.latency_target_us, args.repeats, args.shift_block);
  fmt::print("{:<7} {:>6} {:>8} {:>9} {:>9} {:>11} {:>9} {:>8}\n", "model", "block", "windows",
             "tp err", "p99 err", "p99 med us", "over SLO", "MB/s");
  for (const auto& [name, per] : blocks)
    for (size_t b = 0; b < per.size(); ++b) {
      std::vector<double> etp, ep, pm, ov, mb;
      for (const auto& x : per[b]) {
        etp.push_back(x.tp_err);
        ep.push_back(x.p99_err);
        pm.push_back(x.p99_med);
        ov.push_back(100 * x.over_slo);
        mb.push_back(x.mb_s);
      }
      const uint64_t first = b * args.shift_block;
      fmt::print("{:<7} {:>6} {:>8} {:>9.3f} {:>9.3f} {:>11.0f} {:>8.1f}% {:>8.2f}\n", name, b,
                 fmt::format("{}{}", first, first >= args.phase_windows ? "*" : ""), median(etp),
                 median(ep), median(pm), median(ov), median(mb));
    }
  fmt::print("(* : the block starts after the follower was limited)\nper-window CSV: {}\n",
             args.shift_csv);
  fmt::print("verified: {}\n", verified ? "yes" : "NO");
  return verified ? 0 : 1;
}

}  // namespace rdmarepl::bench
