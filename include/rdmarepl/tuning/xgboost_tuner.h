// The XGBoost tuner (the default): predicts throughput and p99 for a grid of candidate knob
// settings around the current ones and picks the best candidate under the latency target.
//
// Guardrails: one decision moves each knob by at most one grid step (a factor of
// `max_factor`, or one shard); a move whose measured outcome is worse than predicted by
// `revert_margin`, and no better than the window before the move, is reverted and the tuner
// holds still for `hold_after_revert` decisions; results never leave the bounds. Without a usable
// model it returns the initial (static) knobs and says so in last_error().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

struct XgboostTunerStats {
  uint64_t decisions = 0;
  uint64_t moves = 0;
  uint64_t reverts = 0;
  uint64_t fallbacks = 0;  // decisions answered with static knobs (no model, or a failure)
  uint64_t refreshes = 0;
  uint64_t refresh_failures = 0;
};

class XgboostTuner final : public Tuner {
 public:
  // Builds a tuner and loads its model. When the model cannot be loaded the tuner still
  // works, in static fallback; last_error() holds the reason. `bounds` must be valid.
  XgboostTuner(const Knobs& initial, const KnobBounds& bounds, double latency_target_p99_us,
               XgboostOptions options = {});
  // Builds a tuner around a model already in memory.
  XgboostTuner(TuningModel model, const Knobs& initial, const KnobBounds& bounds,
               double latency_target_p99_us, XgboostOptions options = {});
  ~XgboostTuner() override;

  [[nodiscard]] std::string_view name() const noexcept override { return "xgboost"; }
  Knobs decide(const Observation& observation) override;
  void learn(const Sample& sample) override;

  // Replaces the model with the one in `path`. On error the previous model (or the static
  // fallback) stays in use.
  Status load_model(const std::string& path);
  // Updates the model from the ring now. On error the previous model stays in use.
  Status refresh();

  [[nodiscard]] bool has_model() const noexcept { return model_.has_value(); }
  [[nodiscard]] const TuningModel* model() const noexcept { return model_ ? &*model_ : nullptr; }
  // Version of the model in use; 0 when there is none.
  [[nodiscard]] uint64_t model_version() const noexcept { return model_ ? model_->version() : 0; }
  [[nodiscard]] const std::optional<Error>& last_error() const noexcept { return last_error_; }
  [[nodiscard]] const XgboostTunerStats& stats() const noexcept { return stats_; }
  [[nodiscard]] std::size_t ring_size() const noexcept { return ring_.size(); }

 private:
  struct Candidate {
    Knobs knobs;
    Prediction prediction;
  };
  void build_candidates();
  bool outcome_disappoints(const Observation& o) const;

  std::optional<TuningModel> model_;
  Knobs initial_;
  Knobs current_;
  Knobs previous_;  // the knobs before the last move (revert target)
  KnobBounds bounds_;
  double target_us_;
  XgboostOptions opt_;
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
  XgboostTunerStats stats_;
};

// The model file the xgboost tuner loads by default: $RDMAREPL_TUNING_MODEL when set, else
// the installed share/rdmarepl/default_tuning_model.json when it exists, else the copy in the
// source tree this library was built from.
std::string default_model_path();

}  // namespace rdmarepl::tuning
