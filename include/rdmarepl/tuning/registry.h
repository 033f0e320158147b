// Tuners by name. Built in: "static", "heuristic", "xgboost" (the default) and "lstm". A user adds
// their own with TunerRegistry::global().add("name", factory), or hands an instance straight
// to TunerRunner.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"

namespace rdmarepl::tuning {

// Everything a factory may need. Each tuner reads the parts that concern it.
struct TunerConfig {
  KnobBounds bounds;
  Knobs initial;  // in force at start; what the static tuner keeps
  double latency_target_p99_us = 500;
  HeuristicOptions heuristic;
  ModelTunerOptions model;  // the model-driven tuners: "xgboost", "lstm"
};

using TunerFactory = std::function<Result<std::unique_ptr<Tuner>>(const TunerConfig&)>;

class TunerRegistry {
 public:
  // The process-wide registry, with the built-in tuners registered.
  static TunerRegistry& global();

  // Registers `factory` under `name`; an error when the name is taken.
  Status add(std::string name, TunerFactory factory);
  // Validates config.bounds and config.initial, then runs the named factory.
  Result<std::unique_ptr<Tuner>> create(std::string_view name, const TunerConfig& config) const;
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, TunerFactory>> factories_;
};

// TunerRegistry::global().create(name, config).
Result<std::unique_ptr<Tuner>> make_tuner(std::string_view name, const TunerConfig& config);

}  // namespace rdmarepl::tuning
