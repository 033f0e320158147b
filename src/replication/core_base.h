// What the leader and follower engines share: options, transport, metrics, the optional
// background pollers, the control thread's stop flag, the live knobs and the tuner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "channel_memory.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/replication/detail/channel_core.h"
#include "rdmarepl/tuning/runner.h"
#include "rdmarepl/tuning/samplers.h"

namespace rdmarepl::replication::detail {

// The state of one observer of the channel's windows (the tuner has one, observe() callers
// another): the readings at the end of the previous window.
struct WindowState {
  std::mutex mu;
  bool primed = false;
  uint64_t t_ns = 0;
  MetricsSnapshot last;
  double value_count = 0, value_sum = 0, value_sq = 0;
  tuning::CpuSampler cpu;
  tuning::DeviceCounterSampler device;
};

class CoreBase : public ChannelCore {
 public:
  CoreBase(const ChannelOptions& options, std::unique_ptr<transport::Transport> transport);

  [[nodiscard]] MetricsSnapshot metrics() const noexcept override {
    metrics_.memory_registrations.store(
        memory_counters_.registrations.load(std::memory_order_relaxed), std::memory_order_relaxed);
    metrics_.region_registrations.store(
        region_counters_.registrations.load(std::memory_order_relaxed), std::memory_order_relaxed);
    metrics_.region_deregistrations.store(
        region_counters_.deregistrations.load(std::memory_order_relaxed),
        std::memory_order_relaxed);
    MetricsSnapshot s = metrics_.snapshot();
    s.shard_seq.resize(options_.shards);
    for (uint32_t i = 0; i < options_.shards; ++i) s.shard_seq[i] = last_seq(i);
    shard_metrics(s);
    sum_shard_histograms(s);
    return s;
  }
  [[nodiscard]] std::string_view transport_name() const noexcept override {
    return transport_->name();
  }
  [[nodiscard]] const ChannelOptions& options() const noexcept override { return options_; }
  [[nodiscard]] uint32_t key_shard(std::string_view key) const noexcept override;
  [[nodiscard]] size_t group_limit_bytes() const noexcept override;

  // Live knobs and the tuner (channel_tuning.cc).
  Status apply_knobs(const tuning::Knobs& knobs) override;
  [[nodiscard]] tuning::Knobs knobs() const override;
  [[nodiscard]] tuning::Observation observe() override { return observe_window(user_window_); }
  [[nodiscard]] std::optional<tuning::RunnerStats> tuner_stats() const override;
  // Builds the tuner named in options().tuning and starts its thread.
  Status start_tuner();

 protected:
  // Registers the engine's memory, sized by `plan`: the only registrations of the channel's
  // own buffers. Control plane, at create().
  Status open_memory(const MemoryPlan& plan);
  // Starts the poller (unless PollingMode::manual) and the control thread `control`.
  void start_threads(std::function<void()> control);
  // Stops the tuner, the pollers and the control thread; safe to call more than once.
  void stop_threads() noexcept;
  // Sleeps up to `d` or until stop_threads() is called. Returns false once stopping.
  bool sleep_for(std::chrono::nanoseconds d);
  // Blocks in one connection's wait() for PollingMode::blocking; overridden by engines.
  virtual void wait_for_work(std::chrono::microseconds timeout) noexcept;

  // Poller thread `worker` of `workers` (> 1) calls this instead of progress(); the default
  // is progress(). The leader gives each extra worker a fixed slice of the shards.
  virtual size_t progress_worker(uint32_t worker, uint32_t workers) noexcept;
  // Limits the engine's knobs in `want` to what it can do and writes them to `effective`
  // (which holds the knobs in force); the default (follower) leaves them unchanged.
  virtual void limit_engine_knobs(const tuning::Knobs& want, tuning::Knobs& effective) const;
  // Makes the engine's part of `effective` live. Called under the knob lock.
  virtual void apply_engine_knobs(const tuning::Knobs& effective) noexcept;
  // Fills the per-shard vectors of `s` but shard_seq: shard_records, shard_bytes and
  // shard_batches, and on the leader shard_lag, shard_window_stalls, the per-shard
  // histograms (shard_ack_latency_ns) and the link_* vectors. Control plane (allocates).
  virtual void shard_metrics(MetricsSnapshot& s) const = 0;
  // Value sizes accepted so far: count, sum and sum of squares (leader; 0 on a follower).
  virtual void value_totals(double& count, double& sum, double& sq) const noexcept;

  [[nodiscard]] bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }
  [[nodiscard]] PollingMode live_polling() const noexcept {
    return live_polling_.load(std::memory_order_relaxed);
  }

  ChannelOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  mutable ChannelMetrics metrics_;
  // Every registration the channel makes (the arenas of its memory and of the zero-copy
  // pool, all at create()) is counted here; MetricsSnapshot::memory_registrations reads it.
  memory::Counters memory_counters_;
  // Where every registered buffer of the engine comes from (open_memory()). Declared after
  // the counters it counts into and the transport it registered through, so destroyed
  // first; the engine's buffers (members of the derived class) are gone before it.
  ChannelMemory memory_;
  // Registrations of the store's own regions (register_region(), and again after an idle
  // release); MetricsSnapshot::region_registrations reads it.
  memory::Counters region_counters_;

 private:
  void poll_loop(uint32_t worker) noexcept;
  // Starts or stops extra poller threads until `n` run. Under knob_mu_.
  Status set_workers(uint32_t n);
  tuning::Observation observe_window(WindowState& w);

  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::thread poller_;
  std::thread control_;

  // Live polling settings, read by the pollers.
  std::atomic<PollingMode> live_polling_;
  std::atomic<uint32_t> live_poll_interval_us_;
  std::atomic<uint32_t> workers_{1};  // poller threads that should run

  mutable std::mutex knob_mu_;  // serialises apply_knobs(); guards the fields below
  tuning::Knobs knobs_;
  std::vector<std::thread> extra_workers_;  // workers 1..n-1
  bool threads_stopped_ = false;

  WindowState user_window_;
  WindowState tuner_window_;
  std::unique_ptr<tuning::TunerRunner> runner_;
};

}  // namespace rdmarepl::replication::detail
