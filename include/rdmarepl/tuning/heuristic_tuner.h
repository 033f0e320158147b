// The heuristic tuner: AIMD on the batch size against a p99 latency target, and the shard
// count against CPU utilisation. No model; a baseline for the XGBoost tuner and a safe choice
// where no model fits.
#pragma once

#include "rdmarepl/tuning/tuner.h"

namespace rdmarepl::tuning {

struct HeuristicOptions {
  // On a p99 above the target the batch shrinks by this factor (multiplicative decrease).
  double decrease_factor = 0.5;
  // Otherwise it grows by this many bounds.batch_bytes.step units (additive increase).
  uint32_t increase_steps = 4;
  // Above this CPU utilisation a shard is dropped: more threads would only contend.
  double cpu_high = 0.85;
  // Below this CPU utilisation a shard is added when latency is breached or batches queue up.
  double cpu_low = 0.5;
  // Queued batches per active shard above which the channel counts as backlogged.
  double queue_per_shard_high = 2.0;
};

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
