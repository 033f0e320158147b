// ModelTuner: the grid search and guardrails of the model-driven tuners, for any
// PerformanceModel (performance_model.h). Each decision predicts throughput and p99 for a grid
// of candidate knob settings around the current ones and picks the best candidate under the
// latency target.
//
// Guardrails: one decision moves each knob by at most one grid step (a factor of
// `max_factor`, or one shard); a move whose measured outcome is worse than predicted by
// `revert_margin`, and no better than the window before the move, is reverted and the tuner
// holds still for `hold_after_revert` decisions; results never leave the bounds. Without a
// usable model it returns the initial (static) knobs.
//
// Built on it: XgboostTuner ("xgboost", the default, xgboost_tuner.h) and LstmTuner ("lstm",
// lstm_tuner.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/performance_model.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

struct ModelTunerStats {
  uint64_t decisions = 0;
  uint64_t moves = 0;
  uint64_t reverts = 0;
  uint64_t fallbacks = 0;  // decisions answered with static knobs (no model, or a failure)
  uint64_t refreshes = 0;
  uint64_t refresh_failures = 0;
};

class ModelTuner : public Tuner {
 public:
  // `model` may be null: the tuner then keeps the initial knobs until a model is set (or
  // learned, for a kind that can train from live samples). `bounds` must be valid.
  ModelTuner(std::unique_ptr<PerformanceModel> model, const Knobs& initial,
             const KnobBounds& bounds, double latency_target_p99_us, ModelTunerOptions options);
  ~ModelTuner() override;

  Knobs decide(const Observation& observation) final;
  void learn(const Sample& sample) final;

  // Updates the model from the ring of live samples now (or trains a first one). On error
  // the previous model stays in use.
  Status refresh();

  [[nodiscard]] bool has_model() const noexcept { return model_ != nullptr; }
  // Version of the model in use; 0 when there is none.
  [[nodiscard]] uint64_t model_version() const noexcept { return model_ ? model_->version() : 0; }
  [[nodiscard]] const std::optional<Error>& last_error() const noexcept { return last_error_; }
  [[nodiscard]] const ModelTunerStats& stats() const noexcept { return stats_; }
  [[nodiscard]] std::size_t ring_size() const noexcept { return ring_.size(); }

 protected:
  // Replaces the model (any pending prediction is dropped).
  void set_model(std::unique_ptr<PerformanceModel> model) noexcept;
  void set_error(Error e) { last_error_ = std::move(e); }
  [[nodiscard]] PerformanceModel* model_ptr() const noexcept { return model_.get(); }
  [[nodiscard]] const ModelTunerOptions& options() const noexcept { return opt_; }
  // A first model from live samples when there is none; the default cannot train.
  virtual Result<std::unique_ptr<PerformanceModel>> train_first(std::span<const Sample> samples);

 private:
  void build_candidates();
  bool outcome_disappoints(const Observation& o) const;
  // Index of the best candidate in predictions_ (0 = stay) under the target.
  size_t best_candidate() const;
  bool worth_moving(size_t best) const;

  std::unique_ptr<PerformanceModel> model_;
  Knobs initial_;
  Knobs current_;
  Knobs previous_;  // the knobs before the last move (revert target)
  KnobBounds bounds_;
  double target_us_;
  ModelTunerOptions opt_;
  std::optional<Prediction> pending_;  // prediction for the last move, until it is judged
  Outcome before_;                     // measured outcome of the window before that move
  int hold_ = 0;
  std::vector<Knobs> candidates_;
  std::vector<float> rows_;
  std::vector<Prediction> predictions_;
  std::vector<Sample> ring_;
  std::size_t ring_next_ = 0;
  std::size_t since_refresh_ = 0;
  std::optional<Error> last_error_;
  ModelTunerStats stats_;
};

}  // namespace rdmarepl::tuning
