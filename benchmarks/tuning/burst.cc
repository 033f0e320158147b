// rdmarepl-bench --burst: the source's burst experiment (docs/benchmarks.md, "Tuning: burst
// experiment"). An open-loop load alternates between L MB/s (base) and 1.5 L (burst) for
// --burst-cycles cycles of --phase-windows windows each, with 1 KiB values and with values
// uniform in 64 B .. 16 KiB. Strategies, each on a fresh cluster over the same schedule:
//   static-default       the channel's default knobs, never moved
//   heuristic, xgboost, lstm   the channel's tuner, given the SLO as its p99 target
//   fixed-<i>            every setting of the static grid, fixed for the whole run
// and, derived from the fixed runs in hindsight:
//   best-fixed           the one setting with the fewest windows over the SLO (ties: the
//                        highest throughput): what a careful user would have chosen
//   oracle               per phase, the best setting for that phase alone
// Every strategy runs once per repeat; repeats rotate the order. A window is over the SLO
// when its commit p99 is, or when it carried less than 95% of the offered load: the writes
// the open-loop writer could not issue waited longer than any commit latency shows.
// Reported per strategy: the throughput, the share of windows over the SLO (and of those,
// the share short of the load), and the spread of the window p99s (standard deviation,
// maximum), as medians over the repeats with the smallest and largest; then the targets for
// the model-driven tuners against best-fixed and the oracle. Per window: a CSV for
// benchmarks/tuning/plot_burst.py, which --burst-summary reads back into the same report.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "live_cluster.h"
#include "sweep.h"

namespace rdmarepl::bench {

namespace {

struct Phase {
  uint32_t cycle = 0;
  bool burst = false;
  LiveWorkload workload;
};

struct Window {
  size_t phase = 0;
  double p99_us = 0;
  double mb_s = 0;
  double seconds = 0;
  double offered_mb_s = 0;  // key + value bytes the writer offered (mb_s counts encoded bytes)
};

// A window that carried less than this share of the offered load fell behind it.
constexpr double kCarried = 0.95;

// One strategy's windows over the whole schedule, in order.
struct Run {
  std::string name;
  std::vector<Window> windows;
  bool verified = false;
};

// What is reported per strategy and repeat.
struct Summary {
  double mb_s = 0;
  double over_slo = 0;    // share of windows over the SLO (p99, or short of the load)
  double short_load = 0;  // share of windows short of the offered load
  double p99_sd = 0, p99_max = 0;
  std::vector<double> phase_p99;  // per phase: the highest window p99 in it
};

struct Schedule {
  std::string workload;  // "1k" or "mixed"
  std::vector<Phase> phases;
};

Schedule schedule_for(const std::string& kind, double l, uint32_t cycles) {
  Schedule s;
  s.workload = kind;
  const uint32_t lo = kind == "1k" ? 1024 : 64, hi = kind == "1k" ? 1024 : 16384;
  for (uint32_t c = 0; c < cycles; ++c) {
    s.phases.push_back({c, false, {l, lo, hi}});
    s.phases.push_back({c, true, {1.5 * l, lo, hi}});
  }
  return s;
}

Summary summarise(const Run& r, double slo_us, size_t phases) {
  Summary s;
  double mb = 0, secs = 0, sum = 0, sq = 0;
  size_t over = 0, short_load = 0;
  s.phase_p99.assign(phases, 0);
  for (const auto& w : r.windows) {
    mb += w.mb_s * w.seconds;
    secs += w.seconds;
    sum += w.p99_us;
    sq += w.p99_us * w.p99_us;
    s.p99_max = std::max(s.p99_max, w.p99_us);
    const bool behind = w.mb_s < kCarried * w.offered_mb_s;
    if (behind) ++short_load;
    if (behind || w.p99_us > slo_us) ++over;
    s.phase_p99[w.phase] = std::max(s.phase_p99[w.phase], w.p99_us);
  }
  const auto n = static_cast<double>(r.windows.size());
  s.mb_s = secs > 0 ? mb / secs : 0;
  s.over_slo = n > 0 ? static_cast<double>(over) / n : 0;
  s.short_load = n > 0 ? static_cast<double>(short_load) / n : 0;
  const double mean = n > 0 ? sum / n : 0;
  s.p99_sd = n > 0 ? std::sqrt(std::max(0.0, sq / n - mean * mean)) : 0;
  return s;
}

// Fewer windows over the SLO wins; among equal shares the higher throughput.
bool better(const Summary& a, const Summary& b) {
  if (a.over_slo != b.over_slo) return a.over_slo < b.over_slo;
  return a.mb_s > b.mb_s;
}

// The oracle: for each phase the windows of the fixed setting that did best in that phase.
Run oracle_of(const std::vector<Run>& fixed, double slo_us, size_t phases) {
  Run o;
  o.name = "oracle";
  o.verified = true;
  for (size_t p = 0; p < phases; ++p) {
    std::optional<Summary> best;
    const Run* from = nullptr;
    for (const auto& f : fixed) {
      Run part;
      for (const auto& w : f.windows)
        if (w.phase == p) part.windows.push_back(w);
      Summary s = summarise(part, slo_us, phases);
      if (!best || better(s, *best)) {
        best = s;
        from = &f;
      }
    }
    for (const auto& w : from->windows)
      if (w.phase == p) o.windows.push_back(w);
    o.verified = o.verified && from->verified;
  }
  return o;
}

struct Context {
  const kvdemo::RunConfig* config;
  const LiveArgs* args;
  std::chrono::milliseconds win;
  std::ofstream* csv;
  uint32_t repeat = 0;
};

// Runs the schedule on a fresh cluster under `o` (with `fixed` knobs applied after start
// when given); writes each window to the CSV.
Result<Run> run_schedule(const Context& cx, const std::string& name, const Schedule& sch,
                         replication::ChannelOptions o, const std::optional<tuning::Knobs>& fixed) {
  auto cluster = LiveCluster::start(*cx.config, o);
  if (!cluster) return std::move(cluster).error();
  LiveCluster& c = **cluster;
  if (fixed) RDMAREPL_TRY(c.channel().apply_knobs(*fixed));
  Run run;
  run.name = name;
  const double ws = static_cast<double>(cx.win.count()) / 1e3;
  c.set_workload(sch.phases[0].workload);
  for (uint64_t i = 0; i < cx.args->warmup_windows; ++i) (void)c.measure(cx.win);
  for (size_t p = 0; p < sch.phases.size(); ++p) {
    c.set_workload(sch.phases[p].workload);
    for (uint64_t i = 0; i < cx.args->phase_windows; ++i) {
      const LiveWindow w = c.measure(cx.win);
      Window x{p, static_cast<double>(w.latency_ns.percentile(0.99)) / 1e3,
               static_cast<double>(w.bytes) / ws / 1e6, ws, sch.phases[p].workload.offered_mb_s};
      run.windows.push_back(x);
      *cx.csv << fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.6f},{},{:.1f}\n", cx.repeat,
                             sch.workload, name, sch.phases[p].cycle,
                             sch.phases[p].burst ? "burst" : "base", w.t_end_s, x.p99_us, x.mb_s,
                             tuning::to_string(w.knobs), x.offered_mb_s);
    }
  }
  auto v = c.finish(std::chrono::seconds(120));
  if (!v) return std::move(v).error();
  run.verified = *v;
  return run;
}

struct Strategy {
  std::string name;
  replication::ChannelOptions options;
  std::optional<tuning::Knobs> fixed;
};

std::vector<Strategy> strategies(const kvdemo::RunConfig& config, const LiveArgs& args) {
  const auto base = live_leader_options(config);
  const auto bounds = live_bounds(base.shards, base.retain_bytes);
  std::vector<Strategy> out;
  {
    auto o = base;
    const tuning::Knobs defaults;
    o.batch_bytes = defaults.batch_bytes;
    o.flush_delay = std::chrono::microseconds(defaults.flush_delay_us);
    out.push_back({"static-default", o, std::nullopt});
  }
  for (const char* t : {"heuristic", "xgboost", "lstm"}) {
    auto o = base;
    o.tuning.enabled = true;
    o.tuning.tuner = t;
    o.tuning.bounds = bounds;
    o.tuning.period = std::chrono::milliseconds(args.tuner_period_ms);
    o.tuning.latency_target_p99_us = static_cast<double>(args.latency_target_us);
    if (!args.model.empty() && std::string(t) == "xgboost") o.tuning.model.model_path = args.model;
    out.push_back({t, o, std::nullopt});
  }
  tuning::Knobs k0;
  k0.shards = 1;
  k0.pool_bytes = bounds.pool_bytes.max;
  k0.poll_interval_us = 50;
  auto grid = static_grid(k0);
  if (args.burst_grid != 0 && args.burst_grid < grid.size()) grid.resize(args.burst_grid);
  for (size_t i = 0; i < grid.size(); ++i)
    out.push_back({fmt::format("fixed-{}", i), base, grid[i]});
  return out;
}

// Median, smallest and largest of `v` (sorted in place).
std::string spread(std::vector<double> v, const char* fmt_one) {
  std::sort(v.begin(), v.end());
  const double med = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return fmt::format("{} [{} .. {}]", fmt::format(fmt::runtime(fmt_one), med),
                     fmt::format(fmt::runtime(fmt_one), v.front()),
                     fmt::format(fmt::runtime(fmt_one), v.back()));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Per strategy name: its summary in each repeat.
using Table = std::map<std::string, std::vector<Summary>>;

void print_table(const Table& t, const std::vector<std::string>& order) {
  fmt::print("{:<15} {:>26} {:>24} {:>24} {:>24} {:>26}\n", "strategy", "MB/s",
             "windows over SLO %", "short of load %", "window p99 sd (us)", "window p99 max (us)");
  for (const auto& name : order) {
    const auto& rs = t.at(name);
    std::vector<double> mb, over, behind, sd, mx;
    for (const auto& s : rs) {
      mb.push_back(s.mb_s);
      over.push_back(100 * s.over_slo);
      behind.push_back(100 * s.short_load);
      sd.push_back(s.p99_sd);
      mx.push_back(s.p99_max);
    }
    fmt::print("{:<15} {:>26} {:>24} {:>24} {:>24} {:>26}\n", name, spread(mb, "{:.2f}"),
               spread(over, "{:.1f}"), spread(behind, "{:.1f}"), spread(sd, "{:.0f}"),
               spread(mx, "{:.0f}"));
  }
}

// The targets for a model-driven tuner, on the medians over the repeats.
void print_targets(const Table& t, const std::string& tuner) {
  std::vector<double> viol_ratio, tp_ratio, worst_phase;
  const auto& tr = t.at(tuner);
  const auto& bf = t.at("best-fixed");
  const auto& orc = t.at("oracle");
  for (size_t r = 0; r < tr.size(); ++r) {
    viol_ratio.push_back(bf[r].over_slo > 0 ? tr[r].over_slo / bf[r].over_slo
                                            : (tr[r].over_slo > 0 ? INFINITY : 0));
    tp_ratio.push_back(bf[r].mb_s > 0 ? tr[r].mb_s / bf[r].mb_s : 0);
    double worst = 0;
    for (size_t p = 0; p < tr[r].phase_p99.size(); ++p)
      worst = std::max(worst, tr[r].phase_p99[p] / std::max(orc[r].phase_p99[p], 1e-9));
    worst_phase.push_back(worst);
  }
  const double v = median(viol_ratio), tp = median(tp_ratio), w = median(worst_phase);
  const bool ok = v <= 1.0 / 3 && tp >= 0.97 && w <= 1.25;
  fmt::print(
      "{}: windows over SLO {:.2f}x best-fixed (target <= 0.33), throughput {:.3f}x best-fixed "
      "(target >= 0.97), worst phase p99 {:.2f}x oracle (target <= 1.25): {}\n",
      tuner, v, tp, w, ok ? "met" : "NOT met");
}

// One repeat's runs into `table`, with best-fixed and the oracle chosen in hindsight from its
// fixed runs (names starting "fixed-").
void tabulate(std::vector<Run> runs, double slo, size_t np, const std::string& workload,
              uint32_t repeat, Table& table) {
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.name < b.name; });
  std::vector<Run> fixed;
  std::optional<size_t> best;  // index into `fixed`
  Summary best_s;
  for (auto& run : runs) {
    Summary s = summarise(run, slo, np);
    table[run.name].push_back(s);
    if (run.name.rfind("fixed-", 0) != 0) continue;
    if (!best || better(s, best_s)) {
      best = fixed.size();
      best_s = s;
    }
    fixed.push_back(std::move(run));
  }
  if (!best) return;
  table["best-fixed"].push_back(best_s);
  fmt::print("{} repeat {}: best-fixed is {}\n", workload, repeat + 1, fixed[*best].name);
  table["oracle"].push_back(summarise(oracle_of(fixed, slo, np), slo, np));
}

// All strategies over one schedule, `repeats` times, into `table`.
Status run_workload(Context& cx, const Schedule& sch, const std::vector<Strategy>& strats,
                    Table& table, bool& verified) {
  const double slo = static_cast<double>(cx.args->latency_target_us);
  for (uint32_t r = 0; r < cx.args->repeats; ++r) {
    cx.repeat = r;
    std::vector<Run> runs;
    for (size_t k = 0; k < strats.size(); ++k) {
      const auto& s = strats[(k + r) % strats.size()];  // rotate the order per repeat
      fmt::print("{} repeat {}: {} ...\n", sch.workload, r + 1, s.name);
      std::fflush(stdout);
      auto run = run_schedule(cx, s.name, sch, s.options, s.fixed);
      if (!run) return std::move(run).error();
      verified = verified && run->verified;
      runs.push_back(std::move(*run));
    }
    tabulate(std::move(runs), slo, sch.phases.size(), sch.workload, r, table);
  }
  return ok_status();
}

void print_report(const LiveArgs& args, const std::string& kind, uint64_t window_ms,
                  const Table& table, const std::vector<std::string>& order) {
  fmt::print(
      "\nburst, {} values: L = {} MB/s, then 1.5 L; {} cycles of {} + {} windows of {} ms; "
      "SLO p99 {} us, and each window carrying {:.0f}% of the offered load; {} repeats "
      "(median [min .. max])\n",
      kind, args.rate, args.burst_cycles, args.phase_windows, args.phase_windows, window_ms,
      args.latency_target_us, 100 * kCarried, table.begin()->second.size());
  std::vector<std::string> present;
  for (const auto& name : order)
    if (table.count(name) != 0) present.push_back(name);
  print_table(table, present);
  for (const char* t : {"xgboost", "lstm"})
    if (table.count(t) != 0 && table.count("best-fixed") != 0) print_targets(table, t);
}

// The comma-separated cells of one CSV line (the CSV has no quoted cells).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string c; std::getline(in, c, ',');) out.push_back(c);
  return out;
}

// --burst-summary: the report of a run from its per-window CSV (--burst-csv). The offered
// load of a window is its CSV column, or, in a CSV written before that column existed,
// --rate (base) and 1.5 --rate (burst).
int summarise_csv(const LiveArgs& args, uint64_t window_ms) {
  std::ifstream in(args.burst_csv);
  std::string line;
  if (!std::getline(in, line)) {
    fmt::print(stderr, "rdmarepl-bench --burst-summary: cannot read {}\n", args.burst_csv);
    return 2;
  }
  std::map<std::string, size_t> col;
  size_t index = 0;
  for (const auto& c : cells(line)) col[c] = index++;
  for (const char* c : {"repeat", "workload", "strategy", "cycle", "phase", "p99_us", "mb_s"})
    if (col.count(c) == 0) {
      fmt::print(stderr, "rdmarepl-bench --burst-summary: {} has no column '{}'\n", args.burst_csv,
                 c);
      return 2;
    }
  const double ws = static_cast<double>(window_ms) / 1e3;
  // workload -> repeat -> strategy -> run, in file order.
  std::map<std::string, std::map<uint32_t, std::map<std::string, Run>>> runs;
  std::map<std::string, size_t> phases;
  std::vector<std::string> order;
  size_t line_no = 1, short_lines = 0, first_short = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::vector<std::string> f = cells(line);
    if (f.size() < col.size()) {  // a run cut short mid-line
      if (short_lines++ == 0) first_short = line_no;
      continue;
    }
    const bool burst = f[col["phase"]] == "burst";
    const size_t phase = 2 * std::stoul(f[col["cycle"]]) + (burst ? 1 : 0);
    Window w{phase, std::stod(f[col["p99_us"]]), std::stod(f[col["mb_s"]]), ws,
             col.count("offered_mb_s") != 0 ? std::stod(f[col["offered_mb_s"]])
                                            : static_cast<double>(args.rate) * (burst ? 1.5 : 1.0)};
    const std::string& name = f[col["strategy"]];
    Run& r = runs[f[col["workload"]]][static_cast<uint32_t>(std::stoul(f[col["repeat"]]))][name];
    r.name = name;
    r.verified = true;
    r.windows.push_back(w);
    phases[f[col["workload"]]] = std::max(phases[f[col["workload"]]], phase + 1);
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  if (short_lines != 0)
    fmt::print(stderr,
               "rdmarepl-bench --burst-summary: skipped {} line(s) of {} with fewer cells than "
               "its header (the first is line {}): the report leaves those windows out\n",
               short_lines, args.burst_csv, first_short);
  order.push_back("best-fixed");
  order.push_back("oracle");
  const double slo = static_cast<double>(args.latency_target_us);
  for (auto& [kind, repeats] : runs) {
    Table table;
    for (auto& [r, by_name] : repeats) {
      std::vector<Run> rs;
      for (auto& [name, run] : by_name) rs.push_back(std::move(run));
      tabulate(std::move(rs), slo, phases[kind], kind, r, table);
    }
    print_report(args, kind, window_ms, table, order);
  }
  return 0;
}

}  // namespace

int run_burst(const LiveArgs& args) {
  auto fail = [](const std::string& msg) {
    fmt::print(stderr, "rdmarepl-bench --burst: {}\n", msg);
    return 2;
  };
  auto config = live_config(args);
  if (!config) return fail(config.error().message());
  if (args.rate == 0 || args.phase_windows == 0 || args.repeats == 0 || args.burst_cycles == 0)
    return fail("--rate, --phase-windows, --repeats and --burst-cycles must be positive");
  const uint64_t window_ms = args.window_ms != 0 ? args.window_ms : 250;
  if (args.burst_summary) return summarise_csv(args, window_ms);
  std::ofstream csv(args.burst_csv);
  csv << "repeat,workload,strategy,cycle,phase,t_s,p99_us,mb_s,knobs,offered_mb_s\n";
  Context cx{&*config, &args, std::chrono::milliseconds(window_ms), &csv};
  const auto strats = strategies(*config, args);
  std::vector<std::string> order;
  for (const auto& s : strats) order.push_back(s.name);
  order.push_back("best-fixed");
  order.push_back("oracle");
  bool verified = true;
  for (const auto& kind : args.burst_workloads) {
    const auto sch = schedule_for(kind, static_cast<double>(args.rate), args.burst_cycles);
    Table table;
    if (Status s = run_workload(cx, sch, strats, table, verified); !s)
      return fail(s.error().message());
    print_report(args, kind, window_ms, table, order);
  }
  fmt::print("per-window CSV: {} (plot: benchmarks/tuning/plot_burst.py)\nverified: {}\n",
             args.burst_csv, verified ? "yes" : "NO");
  return verified ? 0 : 1;
}

}  // namespace rdmarepl::bench
