#include "rdmarepl/tuning/lstm_tuner.h"

#include "rdmarepl/core/log.h"

namespace rdmarepl::tuning {

LstmTuner::LstmTuner(const Knobs& initial, const KnobBounds& bounds, double latency_target_p99_us,
                     ModelTunerOptions options)
    : ModelTuner(nullptr, initial, bounds, latency_target_p99_us, std::move(options)) {
  const std::string path =
      this->options().model_path.empty() ? default_lstm_model_path() : this->options().model_path;
  auto m = LstmModel::load(path);
  if (!m) {
    log::warn("lstm tuner: {}; using static knobs {}", m.error().message(),
              to_string(clamp(initial, bounds)));
    set_error(std::move(m).error());
    return;
  }
  log::debug("lstm tuner: loaded model '{}' version {} ({} steps, hidden {})", path, m->version(),
             m->steps(), m->hidden());
  set_model(std::make_unique<LstmModel>(std::move(*m)));
}

LstmTuner::LstmTuner(LstmModel model, const Knobs& initial, const KnobBounds& bounds,
                     double latency_target_p99_us, ModelTunerOptions options)
    : ModelTuner(std::make_unique<LstmModel>(std::move(model)), initial, bounds,
                 latency_target_p99_us, std::move(options)) {}

}  // namespace rdmarepl::tuning
