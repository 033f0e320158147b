// PerformanceModel: what a model-driven tuner (model_tuner.h) asks of a model. Given the rows
// of candidate knob settings (features.h: the window just measured, the knobs in force and a
// candidate), it predicts the next window's throughput and p99 under each candidate. Built
// in: two XGBoost ensembles (model.h, tuner "xgboost") and a sequence model over the last
// windows (lstm_model.h, tuner "lstm").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

struct Prediction {
  double bytes_per_s = 0;
  double latency_p99_us = 0;
};

struct EvalReport {
  std::size_t rows = 0;
  double rmse_bytes_per_s = 0, mae_bytes_per_s = 0, mape_bytes_per_s = 0;
  double rmse_p99_us = 0, mae_p99_us = 0, mape_p99_us = 0;
  // RMSE of log1p(prediction) - log1p(truth): the error the models minimise.
  double log_rmse_bytes_per_s = 0, log_rmse_p99_us = 0;
};

class PerformanceModel {
 public:
  virtual ~PerformanceModel() = default;

  // "xgboost", "lstm", ...: names the model in logs.
  [[nodiscard]] virtual std::string_view kind() const noexcept = 0;

  // The row of the window just measured (its candidate part holds the knobs in force), given
  // once per decision before predict(). A sequence model keeps the last windows; a model of
  // one window ignores it (the default).
  virtual void observe(const float* /*row*/) noexcept {}
  // Forgets the windows observe() kept: the next one does not follow them (a new run).
  virtual void reset_history() noexcept {}

  // Predicts `rows` rows of kNumFeatures floats each (row-major) into out[0 .. rows).
  virtual Status predict(const float* rows, std::size_t n, Prediction* out) = 0;

  // Whether update() can learn from live samples; a tuner keeps no samples for one that cannot.
  [[nodiscard]] virtual bool learns_online() const noexcept { return false; }
  // Online learning on `samples`; on error the model is unchanged and usable.
  virtual Status update(std::span<const Sample> /*samples*/, const UpdateOptions& /*options*/) {
    return Error(Errc::unsupported, "this model does not learn online");
  }

  // Starts at 1 for a trained or loaded model and counts updates.
  [[nodiscard]] virtual uint64_t version() const noexcept = 0;
};

// Held-out error of `model` on `samples` taken in order, as a tuner would see them: each
// sample's window is observed, then its outcome predicted under its knobs. The history
// restarts where a sample's knobs in force differ from the previous sample's knobs (a new
// run). For a model of one window this equals evaluate(TuningModel) of model.h.
Result<EvalReport> evaluate_in_order(PerformanceModel& model, std::span<const Sample> samples);

}  // namespace rdmarepl::tuning
