// TuningModel: two gradient-boosted tree ensembles (XGBoost) over the feature layout of
// features.h, one predicting the next window's throughput and one its p99 latency. Both are
// trained on log1p of the target, so squared error is relative error and one model covers
// throughputs from MB/s to tens of GB/s.
//
// Without XGBoost in the build (RDMAREPL_HAVE_XGBOOST == 0) every call that needs a model
// returns Errc::unsupported and available() is false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/performance_model.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

// How predict() evaluates the trees. `native` walks a copy of the trees compiled when the
// model was built or loaded (no per-call overhead; it falls back to `xgboost` if the copy
// could not be made); `xgboost` calls the XGBoost C API. Both give the same numbers up to
// float rounding.
enum class Engine { native, xgboost };

struct TrainOptions {
  int rounds = 60;  // trees per target; decision cost grows linearly with it
  int max_depth = 6;
  double eta = 0.2;  // learning rate
  double subsample = 0.8;
  uint64_t seed = 1;
  int nthread = 1;  // training threads; OpenMP spin-waiting makes more a loss on a busy host
};

// Owns two XGBoost boosters. Destroy it before the process exits (not from a static
// destructor): XGBoost frees per-thread state at thread exit that a booster's destructor uses.
class TuningModel {
 public:
  // True when this build can train and load models.
  static bool available() noexcept;

  static Result<TuningModel> train(std::span<const Sample> samples, const TrainOptions& options);
  // Loads a model written by save(). A missing, truncated or corrupt file, or one written for
  // a different feature layout, is an error that names the file and the problem.
  static Result<TuningModel> load(const std::string& path);
  static Result<TuningModel> from_json(std::string_view json, std::string_view origin);

  TuningModel(TuningModel&&) noexcept;
  TuningModel& operator=(TuningModel&&) noexcept;
  ~TuningModel();

  Status save(const std::string& path) const;
  Result<std::string> to_json() const;
  // An independent copy (through the serialised form).
  Result<TuningModel> clone() const;

  // Predicts `rows` rows of kNumFeatures floats each (row-major) into out[0 .. rows).
  Status predict(const float* features, std::size_t rows, Prediction* out,
                 Engine engine = Engine::native) const;

  // Online learning on `samples`; on error the model is unchanged and usable.
  // Increments version() on success.
  Status update(std::span<const Sample> samples, const UpdateOptions& options);

  // Starts at 1 for a trained or loaded model (a file stores its version) and counts updates.
  [[nodiscard]] uint64_t version() const noexcept;
  [[nodiscard]] int trees_per_target() const noexcept;

 private:
  struct Impl;
  explicit TuningModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Held-out error of `model` on `samples`, in the targets' own units.
Result<EvalReport> evaluate(const TuningModel& model, std::span<const Sample> samples);

}  // namespace rdmarepl::tuning
