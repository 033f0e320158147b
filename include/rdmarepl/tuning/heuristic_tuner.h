// The heuristic tuner: AIMD on the batch size against a p99 latency target, and the shard
// count against CPU utilisation. No model; a baseline for the XGBoost tuner and a safe choice
// where no model fits.
#pragma once

#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

class HeuristicTuner final : public Tuner {
 public:
  // `initial` is clamped into `bounds`; `bounds` must be valid.
  HeuristicTuner(const Knobs& initial, const KnobBounds& bounds, double latency_target_p99_us,
                 HeuristicOptions options = {});
  [[nodiscard]] std::string_view name() const noexcept override { return "heuristic"; }
  // One AIMD step from the knobs this tuner last returned. The shard count moves by at most
  // one per decision; a missing CPU reading leaves it alone.
  Knobs decide(const Observation& observation) override;

 private:
  Knobs knobs_;
  KnobBounds bounds_;
  double target_us_;
  HeuristicOptions opt_;
};

}  // namespace rdmarepl::tuning
