#include "rdmarepl/tuning/runner.h"

#include <fmt/format.h>

#include "core/thread_name.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::tuning {

Result<std::unique_ptr<TunerRunner>> TunerRunner::create(std::unique_ptr<Tuner> tuner,
                                                         const KnobBounds& bounds,
                                                         const Knobs& initial, ObserveFn observe,
                                                         ApplyFn apply, RunnerOptions options) {
  RDMAREPL_TRY(validate(bounds));
  if (!tuner || !observe || !apply) {
    return Error(Errc::invalid_argument,
                 "a tuner runner needs a tuner, an observe callback and an apply callback");
  }
  if (options.period.count() <= 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("tuner period {} ms must be positive", options.period.count()));
  }
  return std::unique_ptr<TunerRunner>(new TunerRunner(
      std::move(tuner), bounds, initial, std::move(observe), std::move(apply), options));
}

TunerRunner::TunerRunner(std::unique_ptr<Tuner> tuner, const KnobBounds& bounds,
                         const Knobs& initial, ObserveFn observe, ApplyFn apply,
                         RunnerOptions options)
    : tuner_(std::move(tuner)),
      bounds_(bounds),
      observe_(std::move(observe)),
      apply_(std::move(apply)),
      opt_(options),
      current_(clamp(initial, bounds)),
      last_under_(current_) {}

TunerRunner::~TunerRunner() {
  stop();
}

Status TunerRunner::start() {
  std::lock_guard lock(run_mu_);
  if (thread_.joinable()) return {};
  stop_ = false;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return Error(e.code(), fmt::format("cannot start the tuner thread: {}", e.what()));
  }
  return {};
}

void TunerRunner::stop() {
  std::thread t;
  {
    std::lock_guard lock(run_mu_);
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void TunerRunner::run() {
  core::name_this_thread("rr-tuner");
  std::unique_lock lock(run_mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, opt_.period, [this] { return stop_; })) break;
    lock.unlock();
    (void)tick();
    lock.lock();
  }
}

bool TunerRunner::tick() {
  std::lock_guard lock(tick_mu_);
  Observation obs = observe_();
  // The window just observed ran under current_; the one before under last_under_.
  if (opt_.learn && last_obs_) {
    tuner_->learn(Sample{*last_obs_, last_under_, current_, outcome_of(obs)});
  }
  Knobs next = tuner_->decide(obs);
  ++stats_.decisions;
  if (Status s = validate(next, bounds_); !s) {
    ++stats_.out_of_bounds;
    log::warn("tuner {}: {}; clamping", tuner_->name(), s.error().message());
    next = clamp(next, bounds_);
  }
  last_obs_ = obs;
  last_under_ = current_;
  if (next == current_) return false;
  ++stats_.changes;
  log::debug("tuner {}: change {}: {} -> {}", tuner_->name(), stats_.changes, to_string(current_),
             to_string(next));
  current_ = next;
  apply_(next);
  return true;
}

Knobs TunerRunner::current() const {
  std::lock_guard lock(tick_mu_);
  return current_;
}

RunnerStats TunerRunner::stats() const {
  std::lock_guard lock(tick_mu_);
  return stats_;
}

}  // namespace rdmarepl::tuning
