// Cost of Tuner::decide() for the static, heuristic and XGBoost tuners, against the cost of
// one single-row prediction through the XGBoost C API measured in the same run (what each
// of the ~20 candidate evaluations would cost without the native tree copy). The target: an XGBoost
// decision under 100 us, i.e. under 0.1% of one core at the default 100 ms period (the budget is
// 1%).
//
//   build/benchmarks/rdmarepl-bench-tuning [--benchmark_min_time=0.5]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/heuristic_tuner.h"
#include "rdmarepl/tuning/lstm_tuner.h"
#include "rdmarepl/tuning/runner.h"
#include "rdmarepl/tuning/static_tuner.h"
#include "rdmarepl/tuning/synthetic.h"
#include "rdmarepl/tuning/xgboost_tuner.h"

namespace {

using namespace rdmarepl;
using namespace rdmarepl::tuning;

constexpr double kPeriodS = 0.1;  // RunnerOptions{}.period

// Observations of varied synthetic workloads, so decisions do not hit one cached path.
const std::vector<Observation>& observations() {
  static const std::vector<Observation> obs = [] {
    std::mt19937_64 rng(3);
    CostModel m;
    std::vector<Observation> v;
    for (int i = 0; i < 256; ++i) {
      v.push_back(m.simulate(random_workload(rng), random_knobs(KnobBounds{}, rng), &rng));
    }
    return v;
  }();
  return obs;
}

// The shipped model when present, else one trained here with the shipped settings.
TuningModel* model() {
  static TuningModel* m = [] {
    if (std::filesystem::exists(RDMAREPL_BENCH_SOURCE_MODEL)) {
      auto l = TuningModel::load(RDMAREPL_BENCH_SOURCE_MODEL);
      if (l) return new TuningModel(std::move(*l));
    }
    std::fprintf(stderr, "no shipped model at %s: training one (60 trees)\n",
                 RDMAREPL_BENCH_SOURCE_MODEL);
    auto t = TuningModel::train(generate_dataset(5000, 7, KnobBounds{}), TrainOptions{});
    return t ? new TuningModel(std::move(*t)) : nullptr;
  }();
  return m;
}

void report_share(benchmark::State& state, double total_ns) {
  double per = total_ns / static_cast<double>(state.iterations());
  state.counters["us_per_decision"] = per * 1e-3;
  state.counters["core_pct_at_100ms"] = 100.0 * per * 1e-9 / kPeriodS;
}

template <class MakeTuner>
void run_decide(benchmark::State& state, MakeTuner make) {
  auto tuner = make();
  const auto& obs = observations();
  size_t i = 0;
  Stopwatch sw;
  for (auto _ : state) {
    Knobs k = tuner->decide(obs[i++ % obs.size()]);
    benchmark::DoNotOptimize(k);
  }
  report_share(state, static_cast<double>(sw.elapsed_ns()));
}

void BM_DecideStatic(benchmark::State& state) {
  run_decide(state, [] { return std::make_unique<StaticTuner>(Knobs{}, KnobBounds{}); });
}
BENCHMARK(BM_DecideStatic);

void BM_DecideHeuristic(benchmark::State& state) {
  run_decide(state, [] { return std::make_unique<HeuristicTuner>(Knobs{}, KnobBounds{}, 500); });
}
BENCHMARK(BM_DecideHeuristic);

ModelTunerOptions bench_options() {
  ModelTunerOptions o;
  o.refresh_every = 0;      // decide() only
  o.hold_after_revert = 0;  // always evaluate the full grid
  o.revert_margin = 1e9;
  return o;
}

void BM_DecideXgboost(benchmark::State& state) {
  if (model() == nullptr) {
    state.SkipWithError("no XGBoost model (built without XGBoost?)");
    return;
  }
  run_decide(state, [] {
    auto copy = model()->clone();
    return std::make_unique<XgboostTuner>(std::move(*copy), Knobs{}, KnobBounds{}, 500,
                                          bench_options());
  });
}
BENCHMARK(BM_DecideXgboost)->Unit(benchmark::kMicrosecond);

// The shipped LSTM model (models/default_lstm_model.bin), or null when it is missing.
const LstmModel* lstm_model() {
  static const LstmModel* m = [] {
    auto l = LstmModel::load(RDMAREPL_BENCH_SOURCE_LSTM_MODEL);
    return l ? new LstmModel(std::move(*l)) : nullptr;
  }();
  return m;
}

// The LSTM's decision: one pass over the history (8 windows) and the head per candidate.
void BM_DecideLstm(benchmark::State& state) {
  if (lstm_model() == nullptr) {
    state.SkipWithError("no LSTM model at " RDMAREPL_BENCH_SOURCE_LSTM_MODEL);
    return;
  }
  run_decide(state, [] {
    return std::make_unique<LstmTuner>(*lstm_model(), Knobs{}, KnobBounds{}, 500, bench_options());
  });
}
BENCHMARK(BM_DecideLstm)->Unit(benchmark::kMicrosecond);

// One row through both boosters: with the XGBoost C API (the baseline), and through the
// native copy of the trees that decide() uses.
void BM_PredictOneRow(benchmark::State& state, Engine engine) {
  if (model() == nullptr) {
    state.SkipWithError("no XGBoost model (built without XGBoost?)");
    return;
  }
  float row[kNumFeatures];
  encode_features(observations()[0], Knobs{}, Knobs{}, row);
  Prediction p;
  for (auto _ : state) {
    (void)model()->predict(row, 1, &p, engine);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK_CAPTURE(BM_PredictOneRow, Xgboost, Engine::xgboost)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PredictOneRow, Native, Engine::native)->Unit(benchmark::kMicrosecond);

// One runner tick (observe + learn + decide + apply) with the XGBoost tuner and learning on:
// what the tuner thread pays per period, model refreshes excluded.
void BM_RunnerTickXgboost(benchmark::State& state) {
  if (model() == nullptr) {
    state.SkipWithError("no XGBoost model (built without XGBoost?)");
    return;
  }
  ModelTunerOptions o = bench_options();
  o.refresh_every = 1u << 30;  // samples go to the ring; no refresh inside the loop
  auto copy = model()->clone();
  size_t i = 0;
  auto r = TunerRunner::create(
      std::make_unique<XgboostTuner>(std::move(*copy), Knobs{}, KnobBounds{}, 500, o), KnobBounds{},
      Knobs{}, [&] { return observations()[i++ % observations().size()]; }, [](const Knobs&) {});
  Stopwatch sw;
  for (auto _ : state) benchmark::DoNotOptimize((*r)->tick());
  report_share(state, static_cast<double>(sw.elapsed_ns()));
}
BENCHMARK(BM_RunnerTickXgboost)->Unit(benchmark::kMicrosecond);

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Median of `reps` timings of `n` calls, in ns per call: wall time and this thread's CPU
// time. On a shared machine the CPU time is the honest measure of the core share.
template <class F>
std::pair<double, double> median_ns(F f, int n, int reps) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    uint64_t c0 = thread_cpu_ns();
    Stopwatch sw;
    for (int i = 0; i < n; ++i) f(i);
    wall.push_back(static_cast<double>(sw.elapsed_ns()) / n);
    cpu.push_back(static_cast<double>(thread_cpu_ns() - c0) / n);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

void summary() {
  if (model() == nullptr) return;
  auto copy = model()->clone();
  XgboostTuner t(std::move(*copy), Knobs{}, KnobBounds{}, 500, bench_options());
  const auto& obs = observations();
  auto decide = median_ns(
      [&](int i) { benchmark::DoNotOptimize(t.decide(obs[static_cast<size_t>(i) % obs.size()])); },
      500, 7);
  std::pair<double, double> lstm{NAN, NAN};
  if (lstm_model() != nullptr) {
    LstmTuner l(*lstm_model(), Knobs{}, KnobBounds{}, 500, bench_options());
    lstm = median_ns(
        [&](int i) {
          benchmark::DoNotOptimize(l.decide(obs[static_cast<size_t>(i) % obs.size()]));
        },
        500, 7);
  }
  float row[kNumFeatures];
  encode_features(obs[0], Knobs{}, Knobs{}, row);
  Prediction p;
  auto one = median_ns([&](int) { (void)model()->predict(row, 1, &p, Engine::xgboost); }, 500, 7);
  std::printf(
      "\nsummary (medians of 7 x 500 calls; %d trees per target)      wall       CPU\n"
      "  xgboost tuner decide()  (target < 100 us)          %8.1f us %8.1f us\n"
      "  lstm tuner decide()     (target < 100 us)          %8.1f us %8.1f us\n"
      "  baseline: one row through the XGBoost C API        %8.1f us %8.1f us\n"
      "  ratio decide / baseline                            %8.2f    %8.2f\n"
      "  share of one core at a %.0f ms period (budget 1%%)  %8.3f%%   %8.3f%%\n",
      model()->trees_per_target(), decide.first * 1e-3, decide.second * 1e-3, lstm.first * 1e-3,
      lstm.second * 1e-3, one.first * 1e-3, one.second * 1e-3, decide.first / one.first,
      decide.second / one.second, kPeriodS * 1e3, 100.0 * decide.first * 1e-9 / kPeriodS,
      100.0 * decide.second * 1e-9 / kPeriodS);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  summary();
  return 0;
}
