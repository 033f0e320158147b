#include "rdmarepl/tuning/registry.h"

#include <fmt/format.h>

#include "rdmarepl/tuning/heuristic_tuner.h"
#include "rdmarepl/tuning/lstm_tuner.h"
#include "rdmarepl/tuning/static_tuner.h"
#include "rdmarepl/tuning/xgboost_tuner.h"

namespace rdmarepl::tuning {

TunerRegistry& TunerRegistry::global() {
  static TunerRegistry* r = [] {
    auto* reg = new TunerRegistry;  // never destroyed: factories may be used at exit
    (void)reg->add("static", [](const TunerConfig& c) -> Result<std::unique_ptr<Tuner>> {
      return std::unique_ptr<Tuner>(std::make_unique<StaticTuner>(c.initial, c.bounds));
    });
    (void)reg->add("heuristic", [](const TunerConfig& c) -> Result<std::unique_ptr<Tuner>> {
      return std::unique_ptr<Tuner>(std::make_unique<HeuristicTuner>(
          c.initial, c.bounds, c.latency_target_p99_us, c.heuristic));
    });
    // A model that cannot be loaded leaves the tuner in static fallback (with a warning),
    // so a channel never fails to start for want of a model.
    (void)reg->add("xgboost", [](const TunerConfig& c) -> Result<std::unique_ptr<Tuner>> {
      return std::unique_ptr<Tuner>(
          std::make_unique<XgboostTuner>(c.initial, c.bounds, c.latency_target_p99_us, c.model));
    });
    (void)reg->add("lstm", [](const TunerConfig& c) -> Result<std::unique_ptr<Tuner>> {
      return std::unique_ptr<Tuner>(
          std::make_unique<LstmTuner>(c.initial, c.bounds, c.latency_target_p99_us, c.model));
    });
    return reg;
  }();
  return *r;
}

Status TunerRegistry::add(std::string name, TunerFactory factory) {
  if (name.empty() || !factory) {
    return Error(Errc::invalid_argument, "a tuner needs a non-empty name and a factory");
  }
  std::lock_guard lock(mu_);
  for (const auto& [n, f] : factories_) {
    if (n == name) {
      return Error(
          Errc::already_exists,
          fmt::format("a tuner named '{}' is already registered: pick another name", name));
    }
  }
  factories_.emplace_back(std::move(name), std::move(factory));
  return {};
}

Result<std::unique_ptr<Tuner>> TunerRegistry::create(std::string_view name,
                                                     const TunerConfig& config) const {
  RDMAREPL_TRY(validate(config.bounds));
  RDMAREPL_TRY(validate(config.initial, config.bounds));
  if (!(config.latency_target_p99_us > 0)) {
    return Error(Errc::invalid_argument, fmt::format("latency target {} us must be positive",
                                                     config.latency_target_p99_us));
  }
  TunerFactory f;
  {
    std::lock_guard lock(mu_);
    for (const auto& [n, fac] : factories_) {
      if (n == name) f = fac;
    }
  }
  if (!f) {
    return Error(Errc::not_found, fmt::format("no tuner named '{}': registered are {}", name,
                                              fmt::join(names(), ", ")));
  }
  auto t = f(config);
  if (t && !*t) {
    return Error(Errc::invalid_argument,
                 fmt::format("the factory of tuner '{}' returned null", name));
  }
  return t;
}

std::vector<std::string> TunerRegistry::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  return out;
}

Result<std::unique_ptr<Tuner>> make_tuner(std::string_view name, const TunerConfig& config) {
  return TunerRegistry::global().create(name, config);
}

}  // namespace rdmarepl::tuning
