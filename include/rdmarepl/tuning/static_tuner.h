// The static tuner: always returns the knobs it was built with (clamped into the bounds).
#pragma once

#include "rdmarepl/tuning/tuner.h"

namespace rdmarepl::tuning {

class StaticTuner final : public Tuner {
 public:
  StaticTuner(const Knobs& knobs, const KnobBounds& bounds) : knobs_(clamp(knobs, bounds)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "static"; }
  Knobs decide(const Observation& /*observation*/) override { return knobs_; }

 private:
  Knobs knobs_;
};

}  // namespace rdmarepl::tuning
