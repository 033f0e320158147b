// The LSTM tuner ("lstm"): ModelTuner (model_tuner.h) over LstmModel (lstm_model.h), a
// sequence model over the last windows. It learns offline only (no live samples are kept).
// Without a usable model file it returns the initial (static) knobs and says why in
// last_error().
#pragma once

#include "rdmarepl/tuning/lstm_model.h"
#include "rdmarepl/tuning/model_tuner.h"

namespace rdmarepl::tuning {

class LstmTuner final : public ModelTuner {
 public:
  // Loads options.model_path, or default_lstm_model_path().
  LstmTuner(const Knobs& initial, const KnobBounds& bounds, double latency_target_p99_us,
            ModelTunerOptions options = {});
  // Builds a tuner around a model already in memory.
  LstmTuner(LstmModel model, const Knobs& initial, const KnobBounds& bounds,
            double latency_target_p99_us, ModelTunerOptions options = {});

  [[nodiscard]] std::string_view name() const noexcept override { return "lstm"; }
};

}  // namespace rdmarepl::tuning
