#include "core_base.h"

#include <functional>

#include "batch_limits.h"
#include "core/thread_name.h"
#include "shard.h"

namespace rdmarepl::replication::detail {

uint32_t CoreBase::key_shard(std::string_view key) const noexcept {
  return shard_of(key, options_.shards);
}

// A group is placed whole into the open batch or a new one, and must never make a batch the
// follower takes for a large record: at most a quarter of the ring with the batch's header
// and padding (docs/replication.md, "Write groups").
size_t CoreBase::group_limit_bytes() const noexcept {
  return large_threshold(options_) - kBatchHeaderSize - kBatchAlign;
}

Status CoreBase::open_memory(const MemoryPlan& plan) {
  auto m = ChannelMemory::create(*transport_, plan, &memory_counters_);
  if (!m.ok()) return std::move(m).error();
  memory_ = std::move(m).value();
  return ok_status();
}

void CoreBase::start_threads(std::function<void()> control) {
  control_ = std::thread([this, control = std::move(control)] {
    core::name_this_thread(options_.role, "control");
    control();
  });
  if (options_.polling != PollingMode::manual) poller_ = std::thread([this] { poll_loop(0); });
}

void CoreBase::stop_threads() noexcept {
  // The tuner first: it may be in apply_knobs(), starting or stopping pollers.
  if (runner_) runner_->stop();
  std::vector<std::thread> extra;
  {
    std::lock_guard lock(knob_mu_);
    threads_stopped_ = true;
    extra = std::move(extra_workers_);
    extra_workers_.clear();
  }
  {
    std::lock_guard lock(stop_mu_);
    stop_.store(true, std::memory_order_release);
  }
  stop_cv_.notify_all();
  for (auto& t : extra)
    if (t.joinable()) t.join();
  if (poller_.joinable()) poller_.join();
  if (control_.joinable()) control_.join();
}

bool CoreBase::sleep_for(std::chrono::nanoseconds d) {
  std::unique_lock lock(stop_mu_);
  stop_cv_.wait_for(lock, d, [this] { return stop_.load(std::memory_order_acquire); });
  return !stop_.load(std::memory_order_acquire);
}

void CoreBase::wait_for_work(std::chrono::microseconds timeout) noexcept {
  std::this_thread::sleep_for(timeout);
}

size_t CoreBase::progress_worker(uint32_t, uint32_t) noexcept {
  return progress();
}

void CoreBase::poll_loop(uint32_t worker) noexcept {
  core::name_this_thread(options_.role, "poll", static_cast<int>(worker));
  // Idle rounds in a row before a busy poller yields the CPU: keeps latency low under load
  // and stops one spinning core from starving the store on a small machine.
  constexpr unsigned kSpinsBeforeYield = 64;
  unsigned idle = 0;
  while (!stopping()) {
    const uint32_t workers = workers_.load(std::memory_order_acquire);
    if (worker >= workers) return;  // this worker was retired by apply_knobs()
    const size_t work = workers <= 1 ? progress() : progress_worker(worker, workers);
    if (work != 0) {
      idle = 0;
      continue;
    }
    ++idle;
    const auto interval =
        std::chrono::microseconds(live_poll_interval_us_.load(std::memory_order_relaxed));
    switch (live_polling_.load(std::memory_order_relaxed)) {
      case PollingMode::busy:
        if (idle > kSpinsBeforeYield) std::this_thread::yield();
        break;
      case PollingMode::sleep:
        std::this_thread::sleep_for(interval);
        break;
      case PollingMode::blocking:
        wait_for_work(interval);
        break;
      case PollingMode::manual:
        return;
    }
  }
}

}  // namespace rdmarepl::replication::detail
