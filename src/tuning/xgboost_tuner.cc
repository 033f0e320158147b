#include "rdmarepl/tuning/xgboost_tuner.h"

#include <cstdlib>
#include <filesystem>

#include "rdmarepl/core/log.h"

namespace rdmarepl::tuning {

XgboostTuner::XgboostTuner(const Knobs& initial, const KnobBounds& bounds,
                           double latency_target_p99_us, ModelTunerOptions options)
    : ModelTuner(nullptr, initial, bounds, latency_target_p99_us, std::move(options)) {
  const std::string path =
      this->options().model_path.empty() ? default_model_path() : this->options().model_path;
  if (Status s = load_model(path); !s)
    log::warn("xgboost tuner: {}; using static knobs {}", s.error().message(),
              to_string(clamp(initial, bounds)));
}

XgboostTuner::XgboostTuner(TuningModel model, const Knobs& initial, const KnobBounds& bounds,
                           double latency_target_p99_us, ModelTunerOptions options)
    : ModelTuner(std::make_unique<XgboostModel>(std::move(model)), initial, bounds,
                 latency_target_p99_us, std::move(options)) {}

Status XgboostTuner::load_model(const std::string& path) {
  auto m = TuningModel::load(path);
  if (!m) {
    set_error(m.error());
    return std::move(m).error();
  }
  log::debug("xgboost tuner: loaded model '{}' version {} ({} trees per target)", path,
             m->version(), m->trees_per_target());
  set_model(std::make_unique<XgboostModel>(std::move(*m)));
  return {};
}

const TuningModel* XgboostTuner::model() const noexcept {
  const auto* m = static_cast<const XgboostModel*>(model_ptr());
  return m != nullptr ? &m->model() : nullptr;
}

Result<std::unique_ptr<PerformanceModel>> XgboostTuner::train_first(
    std::span<const Sample> samples) {
  TrainOptions t;
  t.nthread = 1;
  auto m = TuningModel::train(samples, t);
  if (!m) return std::move(m).error();
  return std::unique_ptr<PerformanceModel>(std::make_unique<XgboostModel>(std::move(*m)));
}

std::string default_model_path() {
  if (const char* env = std::getenv("RDMAREPL_TUNING_MODEL"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
#ifdef RDMAREPL_INSTALLED_MODEL
  if (std::filesystem::exists(RDMAREPL_INSTALLED_MODEL, ec)) return RDMAREPL_INSTALLED_MODEL;
#endif
#ifdef RDMAREPL_SOURCE_MODEL
  if (std::filesystem::exists(RDMAREPL_SOURCE_MODEL, ec)) return RDMAREPL_SOURCE_MODEL;
#endif
  return "share/rdmarepl/default_tuning_model.json";
}

}  // namespace rdmarepl::tuning
