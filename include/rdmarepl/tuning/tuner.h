// The tuner plugin interface.
#pragma once

#include <string_view>

#include "rdmarepl/tuning/knobs.h"
#include "rdmarepl/tuning/observation.h"

namespace rdmarepl::tuning {

// One learning example, in the order things happened: `observation` was measured while
// `observed_under` was in force; then `knobs` were applied and the next window measured
// `outcome`. TunerRunner builds these from consecutive windows.
struct Sample {
  Observation observation;
  Knobs observed_under;
  Knobs knobs;
  Outcome outcome;
};

// A tuner maps the live numbers to the knobs for the next window. Both calls come from one
// control-plane thread at a time (TunerRunner's), never from the data path; a tuner needs no
// locking of its own for them. decide() must return knobs inside the bounds it was built with
// and must not throw.
class Tuner {
 public:
  virtual ~Tuner() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  virtual Knobs decide(const Observation& observation) = 0;
  // Feeds one live sample. The default ignores it.
  virtual void learn(const Sample& /*sample*/) {}
};

}  // namespace rdmarepl::tuning
