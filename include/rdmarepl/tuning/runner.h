// TunerRunner: asks a tuner for knobs once per period, off the data path, and hands changes
// to the channel through a callback.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/tuner.h"

namespace rdmarepl::tuning {

struct RunnerOptions {
  // Decision period. At 100 ms a decision costing 100 us uses 0.1% of one core.
  std::chrono::milliseconds period{100};
  // Feed the tuner a Sample built from each pair of consecutive windows.
  bool learn = true;
};

struct RunnerStats {
  uint64_t decisions = 0;
  uint64_t changes = 0;        // decisions whose knobs differed from those in force
  uint64_t out_of_bounds = 0;  // tuner answers outside the bounds (clamped before applying)
};

class TunerRunner {
 public:
  // Returns the Observation of the window since the previous call. Called on the runner's
  // thread (or tick()'s caller).
  using ObserveFn = std::function<Observation()>;
  // Applies new knobs; called only when they change, on the same thread as ObserveFn.
  using ApplyFn = std::function<void(const Knobs&)>;

  // `initial` are the knobs in force now; they are clamped into `bounds` but not applied.
  // Fails when `bounds` is invalid, a callback is empty or the period is not positive.
  static Result<std::unique_ptr<TunerRunner>> create(std::unique_ptr<Tuner> tuner,
                                                     const KnobBounds& bounds, const Knobs& initial,
                                                     ObserveFn observe, ApplyFn apply,
                                                     RunnerOptions options = {});
  TunerRunner(const TunerRunner&) = delete;
  TunerRunner& operator=(const TunerRunner&) = delete;
  ~TunerRunner();  // stops the thread

  // Starts a thread that calls tick() every period until stop(). Idempotent.
  Status start();
  void stop();

  // One decision now, on the caller's thread: observe, learn from the previous window,
  // decide, clamp, apply if changed. Returns true when the knobs changed. Serialised with the
  // runner's own thread.
  bool tick();

  [[nodiscard]] Knobs current() const;
  [[nodiscard]] RunnerStats stats() const;
  // The tuner, for inspection; call its methods only while the runner is stopped.
  [[nodiscard]] Tuner& tuner() noexcept { return *tuner_; }

 private:
  TunerRunner(std::unique_ptr<Tuner> tuner, const KnobBounds& bounds, const Knobs& initial,
              ObserveFn observe, ApplyFn apply, RunnerOptions options);
  void run();

  std::unique_ptr<Tuner> tuner_;
  KnobBounds bounds_;
  ObserveFn observe_;
  ApplyFn apply_;
  RunnerOptions opt_;

  mutable std::mutex tick_mu_;  // one tick at a time; guards the fields below
  Knobs current_;
  std::optional<Observation> last_obs_;
  Knobs last_under_;
  RunnerStats stats_;

  std::mutex run_mu_;  // guards stop_ and the thread's start/stop
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rdmarepl::tuning
