#include "rdmarepl/tuning/model_tuner.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

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

ModelTuner::ModelTuner(std::unique_ptr<PerformanceModel> model, const Knobs& initial,
                       const KnobBounds& bounds, double latency_target_p99_us,
                       ModelTunerOptions options)
    : model_(std::move(model)),
      initial_(clamp(initial, bounds)),
      current_(initial_),
      previous_(initial_),
      bounds_(bounds),
      target_us_(latency_target_p99_us),
      opt_(std::move(options)) {}

ModelTuner::~ModelTuner() = default;

void ModelTuner::set_model(std::unique_ptr<PerformanceModel> model) noexcept {
  model_ = std::move(model);
  pending_.reset();
}

Result<std::unique_ptr<PerformanceModel>> ModelTuner::train_first(std::span<const Sample>) {
  return Error(Errc::unsupported, fmt::format("the {} tuner cannot train a model from live "
                                              "samples; give it a model file (model_path)",
                                              name()));
}

void ModelTuner::build_candidates() {
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

bool ModelTuner::outcome_disappoints(const Observation& o) const {
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

Knobs ModelTuner::decide(const Observation& o) {
  ++stats_.decisions;
  if (!model_) {
    ++stats_.fallbacks;
    current_ = initial_;
    return current_;
  }
  // Row 0: the window just measured under the knobs in force, which is also the candidate
  // "stay". A sequence model sees every window, also those decided without a prediction.
  rows_.resize(kNumFeatures);
  encode_features(o, current_, current_, rows_.data());
  model_->observe(rows_.data());
  if (pending_ && outcome_disappoints(o)) {
    ++stats_.reverts;
    log::debug(
        "{} tuner: revert {} -> {}: measured {:.3g} B/s p99 {:.1f} us, predicted "
        "{:.3g} B/s p99 {:.1f} us",
        name(), to_string(current_), to_string(previous_), o.bytes_per_s, o.latency_p99_us,
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
  for (size_t i = 1; i < n; ++i) {
    std::copy_n(rows_.data(), kNumFeatures, rows_.data() + i * kNumFeatures);
    encode_candidate(candidates_[i], rows_.data() + i * kNumFeatures);
  }
  Status s = model_->predict(rows_.data(), n, predictions_.data());
  if (!s) {
    ++stats_.fallbacks;
    last_error_ = s.error();
    log::warn("{} tuner: {}; keeping {}", name(), s.error().message(), to_string(current_));
    return current_;
  }
  const size_t best = best_candidate();
  if (worth_moving(best)) {
    ++stats_.moves;
    const Prediction& stay = predictions_[0];
    const Prediction& go = predictions_[best];
    log::debug("{} tuner: {} -> {} (predicted {:.3g} -> {:.3g} B/s, p99 {:.1f} -> {:.1f} us)",
               name(), to_string(current_), to_string(candidates_[best]), stay.bytes_per_s,
               go.bytes_per_s, stay.latency_p99_us, go.latency_p99_us);
    previous_ = current_;
    current_ = candidates_[best];
    pending_ = go;
    before_ = outcome_of(o);
  }
  return current_;
}

// Best feasible candidate: highest predicted throughput with p99 under the target; among
// near-ties the lowest p99. With no feasible candidate: the lowest p99.
size_t ModelTuner::best_candidate() const {
  const size_t n = predictions_.size();
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
  return best;
}

// A move must beat staying by more than the model's noise (min_gain).
bool ModelTuner::worth_moving(size_t best) const {
  if (best == 0) return false;
  const Prediction& stay = predictions_[0];
  const Prediction& go = predictions_[best];
  if (stay.latency_p99_us > target_us_)
    return go.latency_p99_us < stay.latency_p99_us * (1 - opt_.min_gain);
  return go.bytes_per_s > stay.bytes_per_s * (1 + opt_.min_gain) ||
         (go.bytes_per_s >= stay.bytes_per_s * (1 - opt_.tie_share) &&
          go.latency_p99_us < stay.latency_p99_us * (1 - opt_.min_gain));
}

void ModelTuner::learn(const Sample& sample) {
  if (opt_.refresh_every == 0 || opt_.ring_capacity == 0) return;
  // A model that cannot learn online needs no samples (without a model, train_first may).
  if (model_ && !model_->learns_online()) return;
  if (ring_.size() < opt_.ring_capacity) {
    ring_.push_back(sample);
  } else {
    ring_[ring_next_] = sample;
  }
  ring_next_ = (ring_next_ + 1) % opt_.ring_capacity;
  if (++since_refresh_ >= opt_.refresh_every) (void)refresh();
}

Status ModelTuner::refresh() {
  since_refresh_ = 0;
  if (ring_.empty()) return {};
  Status s;
  if (model_) {
    s = model_->update(ring_, opt_.update);
  } else {
    // No model yet (none shipped, or the file was bad): learn one from live samples.
    auto m = train_first(ring_);
    if (m) {
      model_ = std::move(*m);
    } else {
      s = std::move(m).error();
    }
  }
  if (!s) {
    ++stats_.refresh_failures;
    last_error_ = s.error();
    log::warn("{} tuner: model refresh from {} samples failed: {}; keeping model version {}",
              name(), ring_.size(), s.error().message(), model_version());
    return s;
  }
  ++stats_.refreshes;
  log::debug("{} tuner: model refreshed from {} samples, now version {}", name(), ring_.size(),
             model_version());
  return {};
}

}  // namespace rdmarepl::tuning
