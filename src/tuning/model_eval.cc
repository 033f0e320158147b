#include <cmath>
#include <vector>

#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/performance_model.h"

namespace rdmarepl::tuning {

namespace {

// Sums of the errors of predictions against outcomes, in the units of EvalReport.
class ErrorTally {
 public:
  void add(const Prediction& p, const Outcome& o) {
    const double dt = p.bytes_per_s - o.bytes_per_s;
    const double dl = p.latency_p99_us - o.latency_p99_us;
    se_tp_ += dt * dt;
    ae_tp_ += std::fabs(dt);
    pe_tp_ += std::fabs(dt) / std::max(o.bytes_per_s, 1.0);
    se_l_ += dl * dl;
    ae_l_ += std::fabs(dl);
    pe_l_ += std::fabs(dl) / std::max(o.latency_p99_us, 1e-3);
    const double lt = std::log1p(p.bytes_per_s) - std::log1p(o.bytes_per_s);
    const double ll = std::log1p(p.latency_p99_us) - std::log1p(o.latency_p99_us);
    lse_tp_ += lt * lt;
    lse_l_ += ll * ll;
    ++rows_;
  }

  [[nodiscard]] EvalReport report() const {
    const auto n = static_cast<double>(rows_);
    EvalReport r;
    r.rows = rows_;
    r.rmse_bytes_per_s = std::sqrt(se_tp_ / n);
    r.mae_bytes_per_s = ae_tp_ / n;
    r.mape_bytes_per_s = pe_tp_ / n;
    r.rmse_p99_us = std::sqrt(se_l_ / n);
    r.mae_p99_us = ae_l_ / n;
    r.mape_p99_us = pe_l_ / n;
    r.log_rmse_bytes_per_s = std::sqrt(lse_tp_ / n);
    r.log_rmse_p99_us = std::sqrt(lse_l_ / n);
    return r;
  }

 private:
  double se_tp_ = 0, ae_tp_ = 0, pe_tp_ = 0, se_l_ = 0, ae_l_ = 0, pe_l_ = 0;
  double lse_tp_ = 0, lse_l_ = 0;
  size_t rows_ = 0;
};

Status need_samples(std::span<const Sample> samples) {
  if (samples.empty())
    return Error(Errc::invalid_argument, "no samples to evaluate on: supply a non-empty dataset");
  return {};
}

}  // namespace

Result<EvalReport> evaluate(const TuningModel& model, std::span<const Sample> samples) {
  RDMAREPL_TRY(need_samples(samples));
  constexpr size_t kChunk = 1024;
  std::vector<float> x(kChunk * kNumFeatures);
  std::vector<Prediction> p(kChunk);
  ErrorTally tally;
  for (size_t start = 0; start < samples.size(); start += kChunk) {
    size_t n = std::min(kChunk, samples.size() - start);
    for (size_t i = 0; i < n; ++i) {
      const Sample& s = samples[start + i];
      encode_features(s.observation, s.observed_under, s.knobs, &x[i * kNumFeatures]);
    }
    RDMAREPL_TRY(model.predict(x.data(), n, p.data()));
    for (size_t i = 0; i < n; ++i) tally.add(p[i], samples[start + i].outcome);
  }
  return tally.report();
}

Result<EvalReport> evaluate_in_order(PerformanceModel& model, std::span<const Sample> samples) {
  RDMAREPL_TRY(need_samples(samples));
  std::vector<float> row(kNumFeatures);
  ErrorTally tally;
  model.reset_history();
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (i > 0 && !(s.observed_under == samples[i - 1].knobs)) model.reset_history();
    encode_features(s.observation, s.observed_under, s.observed_under, row.data());
    model.observe(row.data());
    encode_candidate(s.knobs, row.data());
    Prediction p;
    RDMAREPL_TRY(model.predict(row.data(), 1, &p));
    tally.add(p, s.outcome);
  }
  return tally.report();
}

}  // namespace rdmarepl::tuning
