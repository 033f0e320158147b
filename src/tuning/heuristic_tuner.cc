#include "rdmarepl/tuning/heuristic_tuner.h"

namespace rdmarepl::tuning {

HeuristicTuner::HeuristicTuner(const Knobs& initial, const KnobBounds& bounds,
                               double latency_target_p99_us, HeuristicOptions options)
    : knobs_(clamp(initial, bounds)),
      bounds_(bounds),
      target_us_(latency_target_p99_us),
      opt_(options) {}

Knobs HeuristicTuner::decide(const Observation& o) {
  Knobs k = knobs_;
  const bool breach = o.latency_p99_us > target_us_;
  if (breach) {
    double shrunk = static_cast<double>(k.batch_bytes) * opt_.decrease_factor;
    k.batch_bytes = shrunk < 1.0 ? 0 : static_cast<uint64_t>(shrunk);
  } else {
    k.batch_bytes += static_cast<uint64_t>(opt_.increase_steps) * bounds_.batch_bytes.step;
  }
  if (o.cpu_utilization) {
    const double cpu = *o.cpu_utilization;
    const bool backlog = o.queue_depth > opt_.queue_per_shard_high * k.shards;
    if (cpu > opt_.cpu_high && k.shards > bounds_.shards.min) {
      k.shards -= 1;
    } else if (cpu < opt_.cpu_low && (breach || backlog)) {
      k.shards += 1;
    }
  }
  knobs_ = clamp(k, bounds_);
  return knobs_;
}

}  // namespace rdmarepl::tuning
