#include "rdmarepl/tuning/xgboost_tuner.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "rdmarepl/core/log.h"
#include "rdmarepl/tuning/features.h"

namespace rdmarepl::tuning {

namespace {

// One grid step of a multiplicative knob: at least one `step` of movement, at most a factor
// of `f`, inside the range.
uint64_t scaled(uint64_t v, double f, const KnobRange& r) {
  double target = std::round(static_cast<double>(v) * f);
  uint64_t s = r.snap(target < 0 ? 0 : static_cast<uint64_t>(target));
  if (s == v) {
    if (f > 1) s = r.snap(v + r.step);
    if (f < 1) s = r.snap(v > r.step ? v - r.step : 0);
  }
  return s;
}

uint32_t shard_step(uint32_t shards, int delta, const KnobRange& r) {
  uint64_t v = delta < 0 ? (shards > 0 ? shards - 1u : 0u) : shards + 1ull;
  return static_cast<uint32_t>(r.snap(v));
}

}  // namespace

XgboostTuner::XgboostTuner(const Knobs& initial, const KnobBounds& bounds,
                           double latency_target_p99_us, XgboostOptions options)
    : initial_(clamp(initial, bounds)),
      current_(initial_),
      previous_(initial_),
      bounds_(bounds),
      target_us_(latency_target_p99_us),
      opt_(std::move(options)) {
  std::string path = opt_.model_path.empty() ? default_model_path() : opt_.model_path;
  Status s = load_model(path);
  if (!s)
    log::warn("xgboost tuner: {}; using static knobs {}", s.error().message(), to_string(initial_));
}

XgboostTuner::XgboostTuner(TuningModel model, const Knobs& initial, const KnobBounds& bounds,
                           double latency_target_p99_us, XgboostOptions options)
    : model_(std::move(model)),
      initial_(clamp(initial, bounds)),
      current_(initial_),
      previous_(initial_),
      bounds_(bounds),
      target_us_(latency_target_p99_us),
      opt_(std::move(options)) {}

XgboostTuner::~XgboostTuner() = default;

Status XgboostTuner::load_model(const std::string& path) {
  auto m = TuningModel::load(path);
  if (!m) {
    last_error_ = m.error();
    return std::move(m).error();
  }
  model_ = std::move(*m);
  pending_.reset();
  log::debug("xgboost tuner: loaded model '{}' version {} ({} trees per target)", path,
             model_->version(), model_->trees_per_target());
  return {};
}

void XgboostTuner::build_candidates() {
  candidates_.clear();
  const Knobs c = current_;
  auto add = [&](Knobs k) {
    k = clamp(k, bounds_);
    for (const auto& e : candidates_) {
      if (e == k) return;
    }
    candidates_.push_back(k);
  };
  add(c);  // index 0: stay
  const double f = opt_.max_factor;
  const KnobBounds& b = bounds_;
  for (double g : {f, 1 / f}) {
    Knobs k = c;
    k.batch_bytes = scaled(c.batch_bytes, g, b.batch_bytes);
    add(k);
    k = c;
    k.flush_delay_us = static_cast<uint32_t>(scaled(c.flush_delay_us, g, b.flush_delay_us));
    add(k);
    k = c;
    k.pool_bytes = scaled(c.pool_bytes, g, b.pool_bytes);
    add(k);
    if (c.poll_mode == PollingMode::sleep) {
      k = c;
      k.poll_interval_us = static_cast<uint32_t>(scaled(c.poll_interval_us, g, b.poll_interval_us));
      add(k);
    }
  }
  for (int d : {-1, 1}) {
    Knobs k = c;
    k.shards = shard_step(c.shards, d, b.shards);
    add(k);
  }
  for (int m = 0; m < kNumPollModes; ++m) {
    Knobs k = c;
    k.poll_mode = static_cast<PollingMode>(m);
    if (b.allows(k.poll_mode)) add(k);
  }
  // Pairs that often move together: batch with shards, batch with flush delay.
  for (double g : {f, 1 / f}) {
    for (int d : {-1, 1}) {
      Knobs k = c;
      k.batch_bytes = scaled(c.batch_bytes, g, b.batch_bytes);
      k.shards = shard_step(c.shards, d, b.shards);
      add(k);
    }
    for (double h : {f, 1 / f}) {
      Knobs k = c;
      k.batch_bytes = scaled(c.batch_bytes, g, b.batch_bytes);
      k.flush_delay_us = static_cast<uint32_t>(scaled(c.flush_delay_us, h, b.flush_delay_us));
      add(k);
    }
  }
}

bool XgboostTuner::outcome_disappoints(const Observation& o) const {
  const double m = opt_.revert_margin;
  const bool short_of_prediction = o.bytes_per_s < pending_->bytes_per_s * (1 - m) ||
                                   o.latency_p99_us > pending_->latency_p99_us * (1 + m);
  // A move that fell short of its prediction but still beat the window before it is kept:
  // the model was wrong about how much, not about the direction.
  const bool better_than_before = o.bytes_per_s > before_.bytes_per_s * (1 + opt_.min_gain) ||
                                  (o.bytes_per_s >= before_.bytes_per_s * (1 - opt_.tie_share) &&
                                   o.latency_p99_us < before_.latency_p99_us * (1 - opt_.min_gain));
  return short_of_prediction && !better_than_before;
}

Knobs XgboostTuner::decide(const Observation& o) {
  ++stats_.decisions;
  if (!model_) {
    ++stats_.fallbacks;
    current_ = initial_;
    return current_;
  }
  if (pending_ && outcome_disappoints(o)) {
    ++stats_.reverts;
    log::debug(
        "xgboost tuner: revert {} -> {}: measured {:.3g} B/s p99 {:.1f} us, predicted "
        "{:.3g} B/s p99 {:.1f} us",
        to_string(current_), to_string(previous_), o.bytes_per_s, o.latency_p99_us,
        pending_->bytes_per_s, pending_->latency_p99_us);
    current_ = previous_;
    pending_.reset();
    hold_ = opt_.hold_after_revert;
    return current_;
  }
  pending_.reset();
  if (hold_ > 0) {
    --hold_;
    return current_;
  }

  build_candidates();
  const size_t n = candidates_.size();
  rows_.resize(n * kNumFeatures);
  predictions_.resize(n);
  encode_features(o, current_, candidates_[0], rows_.data());
  for (size_t i = 1; i < n; ++i) {
    std::copy_n(rows_.data(), kNumFeatures, rows_.data() + i * kNumFeatures);
    encode_candidate(candidates_[i], rows_.data() + i * kNumFeatures);
  }
  Status s = model_->predict(rows_.data(), n, predictions_.data());
  if (!s) {
    ++stats_.fallbacks;
    last_error_ = s.error();
    log::warn("xgboost tuner: {}; keeping {}", s.error().message(), to_string(current_));
    return current_;
  }

  // Best feasible candidate: highest predicted throughput with p99 under the target; among
  // near-ties the lowest p99. With no feasible candidate: the lowest p99.
  size_t best = 0;
  bool any_feasible = false;
  double best_tp = 0;
  for (size_t i = 0; i < n; ++i) {
    if (predictions_[i].latency_p99_us <= target_us_) {
      any_feasible = true;
      best_tp = std::max(best_tp, predictions_[i].bytes_per_s);
    }
  }
  if (any_feasible) {
    double best_p99 = INFINITY;
    for (size_t i = 0; i < n; ++i) {
      const Prediction& p = predictions_[i];
      if (p.latency_p99_us <= target_us_ && p.bytes_per_s >= best_tp * (1 - opt_.tie_share) &&
          p.latency_p99_us < best_p99) {
        best = i;
        best_p99 = p.latency_p99_us;
      }
    }
  } else {
    for (size_t i = 1; i < n; ++i) {
      if (predictions_[i].latency_p99_us < predictions_[best].latency_p99_us) best = i;
    }
  }

  const Prediction& stay = predictions_[0];
  const Prediction& go = predictions_[best];
  bool worth = false;
  if (best != 0) {
    bool stay_feasible = stay.latency_p99_us <= target_us_;
    if (!stay_feasible) {
      worth = go.latency_p99_us < stay.latency_p99_us * (1 - opt_.min_gain);
    } else {
      worth = go.bytes_per_s > stay.bytes_per_s * (1 + opt_.min_gain) ||
              (go.bytes_per_s >= stay.bytes_per_s * (1 - opt_.tie_share) &&
               go.latency_p99_us < stay.latency_p99_us * (1 - opt_.min_gain));
    }
  }
  if (worth) {
    ++stats_.moves;
    log::debug("xgboost tuner: {} -> {} (predicted {:.3g} -> {:.3g} B/s, p99 {:.1f} -> {:.1f} us)",
               to_string(current_), to_string(candidates_[best]), stay.bytes_per_s, go.bytes_per_s,
               stay.latency_p99_us, go.latency_p99_us);
    previous_ = current_;
    current_ = candidates_[best];
    pending_ = go;
    before_ = outcome_of(o);
  }
  return current_;
}

void XgboostTuner::learn(const Sample& sample) {
  if (opt_.refresh_every == 0 || opt_.ring_capacity == 0) return;
  if (ring_.size() < opt_.ring_capacity) {
    ring_.push_back(sample);
  } else {
    ring_[ring_next_] = sample;
  }
  ring_next_ = (ring_next_ + 1) % opt_.ring_capacity;
  if (++since_refresh_ >= opt_.refresh_every) (void)refresh();
}

Status XgboostTuner::refresh() {
  since_refresh_ = 0;
  if (ring_.empty()) return {};
  Status s;
  if (model_) {
    s = model_->update(ring_, opt_.update);
  } else {
    // No model yet (none shipped, or the file was bad): learn one from live samples.
    TrainOptions t;
    t.nthread = 1;
    auto m = TuningModel::train(ring_, t);
    if (m) {
      model_ = std::move(*m);
    } else {
      s = std::move(m).error();
    }
  }
  if (!s) {
    ++stats_.refresh_failures;
    last_error_ = s.error();
    log::warn("xgboost tuner: model refresh from {} samples failed: {}; keeping model version {}",
              ring_.size(), s.error().message(), model_version());
    return s;
  }
  ++stats_.refreshes;
  log::debug("xgboost tuner: model refreshed from {} samples, now version {}", ring_.size(),
             model_version());
  return {};
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
