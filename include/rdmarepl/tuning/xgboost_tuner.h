// The XGBoost tuner (the default, "xgboost"): ModelTuner (model_tuner.h) over two XGBoost
// ensembles (model.h) that learn online from live samples. Without a usable model it returns
// the initial (static) knobs, says so in last_error(), and trains a first model from live
// samples once its ring has `refresh_every` of them.
#pragma once

#include <string>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/model_tuner.h"

namespace rdmarepl::tuning {

// A PerformanceModel over a TuningModel.
class XgboostModel final : public PerformanceModel {
 public:
  explicit XgboostModel(TuningModel model) : model_(std::move(model)) {}
  [[nodiscard]] std::string_view kind() const noexcept override { return "xgboost"; }
  Status predict(const float* rows, std::size_t n, Prediction* out) override {
    return model_.predict(rows, n, out);
  }
  [[nodiscard]] bool learns_online() const noexcept override { return true; }
  Status update(std::span<const Sample> samples, const UpdateOptions& options) override {
    return model_.update(samples, options);
  }
  [[nodiscard]] uint64_t version() const noexcept override { return model_.version(); }
  [[nodiscard]] const TuningModel& model() const noexcept { return model_; }

 private:
  TuningModel model_;
};

class XgboostTuner final : public ModelTuner {
 public:
  // Builds a tuner and loads its model (options.model_path, or default_model_path()). When
  // the model cannot be loaded the tuner still works, in static fallback.
  XgboostTuner(const Knobs& initial, const KnobBounds& bounds, double latency_target_p99_us,
               ModelTunerOptions options = {});
  // Builds a tuner around a model already in memory.
  XgboostTuner(TuningModel model, const Knobs& initial, const KnobBounds& bounds,
               double latency_target_p99_us, ModelTunerOptions options = {});

  [[nodiscard]] std::string_view name() const noexcept override { return "xgboost"; }

  // Replaces the model with the one in `path`. On error the previous model (or the static
  // fallback) stays in use.
  Status load_model(const std::string& path);
  [[nodiscard]] const TuningModel* model() const noexcept;

 protected:
  Result<std::unique_ptr<PerformanceModel>> train_first(std::span<const Sample> samples) override;
};

// The model file the xgboost tuner loads by default: $RDMAREPL_TUNING_MODEL when set, else
// the installed share/rdmarepl/default_tuning_model.json when it exists, else the copy in the
// source tree this library was built from.
std::string default_model_path();

}  // namespace rdmarepl::tuning
