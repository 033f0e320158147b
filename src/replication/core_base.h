// What the leader and follower engines share: options, transport, metrics, the optional
// background poller and the control thread's stop flag.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "rdmarepl/replication/channel_core.h"

namespace rdmarepl::replication::detail {

class CoreBase : public ChannelCore {
 public:
  CoreBase(const ChannelOptions& options, std::unique_ptr<transport::Transport> transport)
      : options_(options), transport_(std::move(transport)) {}

  [[nodiscard]] MetricsSnapshot metrics() const noexcept override { return metrics_.snapshot(); }
  [[nodiscard]] std::string_view transport_name() const noexcept override {
    return transport_->name();
  }
  [[nodiscard]] const ChannelOptions& options() const noexcept override { return options_; }

 protected:
  // Starts the poller (unless PollingMode::manual) and the control thread `control`.
  void start_threads(std::function<void()> control);
  // Stops both threads; safe to call more than once.
  void stop_threads() noexcept;
  // Sleeps up to `d` or until stop_threads() is called. Returns false once stopping.
  bool sleep_for(std::chrono::nanoseconds d);
  // Blocks in one connection's wait() for PollingMode::blocking; overridden by engines.
  virtual void wait_for_work(std::chrono::microseconds timeout) noexcept;

  [[nodiscard]] bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }

  ChannelOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  mutable ChannelMetrics metrics_;

 private:
  void poll_loop() noexcept;

  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::thread poller_;
  std::thread control_;
};

}  // namespace rdmarepl::replication::detail
