#include "core_base.h"

#include <functional>

namespace rdmarepl::replication::detail {

void CoreBase::start_threads(std::function<void()> control) {
  control_ = std::thread(std::move(control));
  if (options_.polling != PollingMode::manual) poller_ = std::thread([this] { poll_loop(); });
}

void CoreBase::stop_threads() noexcept {
  {
    std::lock_guard lock(stop_mu_);
    stop_.store(true, std::memory_order_release);
  }
  stop_cv_.notify_all();
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

void CoreBase::poll_loop() noexcept {
  // Idle rounds in a row before a busy poller yields the CPU: keeps latency low under load
  // and stops one spinning core from starving the store on a small machine.
  constexpr unsigned kSpinsBeforeYield = 64;
  unsigned idle = 0;
  while (!stopping()) {
    if (progress() != 0) {
      idle = 0;
      continue;
    }
    ++idle;
    switch (options_.polling) {
      case PollingMode::busy:
        if (idle > kSpinsBeforeYield) std::this_thread::yield();
        break;
      case PollingMode::sleep:
        std::this_thread::sleep_for(options_.poll_interval);
        break;
      case PollingMode::blocking:
        wait_for_work(options_.poll_interval);
        break;
      case PollingMode::manual:
        return;
    }
  }
}

}  // namespace rdmarepl::replication::detail
