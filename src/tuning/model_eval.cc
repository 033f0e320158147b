#include <cmath>
#include <vector>

#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/model.h"

namespace rdmarepl::tuning {

Result<EvalReport> evaluate(const TuningModel& model, std::span<const Sample> samples) {
  if (samples.empty()) {
    return Error(Errc::invalid_argument, "no samples to evaluate on: supply a non-empty dataset");
  }
  constexpr size_t kChunk = 1024;
  std::vector<float> x(kChunk * kNumFeatures);
  std::vector<Prediction> p(kChunk);
  double se_tp = 0, ae_tp = 0, pe_tp = 0, se_l = 0, ae_l = 0, pe_l = 0, lse_tp = 0, lse_l = 0;
  for (size_t start = 0; start < samples.size(); start += kChunk) {
    size_t n = std::min(kChunk, samples.size() - start);
    for (size_t i = 0; i < n; ++i) {
      const Sample& s = samples[start + i];
      encode_features(s.observation, s.observed_under, s.knobs, &x[i * kNumFeatures]);
    }
    RDMAREPL_TRY(model.predict(x.data(), n, p.data()));
    for (size_t i = 0; i < n; ++i) {
      const Outcome& o = samples[start + i].outcome;
      double dt = p[i].bytes_per_s - o.bytes_per_s;
      double dl = p[i].latency_p99_us - o.latency_p99_us;
      se_tp += dt * dt;
      ae_tp += std::fabs(dt);
      pe_tp += std::fabs(dt) / std::max(o.bytes_per_s, 1.0);
      se_l += dl * dl;
      ae_l += std::fabs(dl);
      pe_l += std::fabs(dl) / std::max(o.latency_p99_us, 1e-3);
      double lt = std::log1p(p[i].bytes_per_s) - std::log1p(o.bytes_per_s);
      double ll = std::log1p(p[i].latency_p99_us) - std::log1p(o.latency_p99_us);
      lse_tp += lt * lt;
      lse_l += ll * ll;
    }
  }
  auto n = static_cast<double>(samples.size());
  EvalReport r;
  r.rows = samples.size();
  r.rmse_bytes_per_s = std::sqrt(se_tp / n);
  r.mae_bytes_per_s = ae_tp / n;
  r.mape_bytes_per_s = pe_tp / n;
  r.rmse_p99_us = std::sqrt(se_l / n);
  r.mae_p99_us = ae_l / n;
  r.mape_p99_us = pe_l / n;
  r.log_rmse_bytes_per_s = std::sqrt(lse_tp / n);
  r.log_rmse_p99_us = std::sqrt(lse_l / n);
  return r;
}

}  // namespace rdmarepl::tuning
