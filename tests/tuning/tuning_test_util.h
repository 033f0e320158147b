// Shared helpers of the tuning tests: a small model trained once per test binary.
#pragma once

#include <catch2/catch.hpp>

#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/synthetic.h"

namespace rdmarepl::tuning::testing {

// Prints the reason and returns true when this build cannot run XGBoost tests.
inline bool skip_without_xgboost() {
  if (TuningModel::available()) return false;
  WARN("skipped: this build has no XGBoost (RDMAREPL_HAVE_XGBOOST=0); install libxgboost-dev");
  return true;
}

inline const std::vector<Sample>& small_dataset() {
  static const std::vector<Sample> data = generate_dataset(3000, 42, KnobBounds{});
  return data;
}

// The shipped default model (loading it is much faster than training one per test process);
// without it, 30 trees trained on 3000 synthetic rows.
inline const TuningModel& small_model() {
  // Deliberately leaked: a model must not be destroyed after main() returns (model.h).
  static const TuningModel* model = []() -> const TuningModel* {
    auto shipped = TuningModel::load(RDMAREPL_TEST_SOURCE_MODEL);
    if (shipped) return new TuningModel(std::move(*shipped));
    WARN("no shipped model (" << shipped.error().message() << "): training a small one");
    TrainOptions opt;
    opt.rounds = 30;
    opt.nthread = 1;  // OpenMP spinning slows a busy machine more than it helps
    auto m = TuningModel::train(small_dataset(), opt);
    REQUIRE(m.ok());
    return new TuningModel(std::move(*m));
  }();
  return *model;
}

inline TuningModel copy_of_small_model() {
  auto c = small_model().clone();
  REQUIRE(c.ok());
  return std::move(*c);
}

}  // namespace rdmarepl::tuning::testing
