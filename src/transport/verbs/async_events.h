// The device's asynchronous events (ibv_get_async_event): a port going down or up, a QP
// hitting a fatal error outside any completion. One thread per transport reads them, logs
// each, and hands them to the connections as plain atomics that the data path reads without
// locking or allocating: a port error fails every connection created before it, a QP event
// fails that QP's connection.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <string_view>
#include <thread>

#include "rdmarepl/core/result.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::verbs {

class Device;

// Set in each QP's qp_context so that a QP event reaches its connection. The connection
// outlives its QP, and ibv_destroy_qp waits until every event naming the QP is acknowledged,
// so the monitor never touches a destroyed sink.
struct QpEventSink {
  std::atomic<int> event{-1};  // the first fatal ibv_event_type seen for the QP, else -1
};

class AsyncEventMonitor {
 public:
  AsyncEventMonitor() = default;
  AsyncEventMonitor(const AsyncEventMonitor&) = delete;
  AsyncEventMonitor& operator=(const AsyncEventMonitor&) = delete;
  ~AsyncEventMonitor() { stop(); }

  // Starts the reader thread on `device`'s async fd (made non-blocking).
  Status start(const Device& device);
  void stop() noexcept;

  // Port errors seen so far (IBV_EVENT_PORT_ERR on the transport's port).
  [[nodiscard]] uint64_t port_errors() const noexcept {
    return port_errors_.load(std::memory_order_acquire);
  }
  // Every event read so far (for tests and diagnostics).
  [[nodiscard]] uint64_t events() const noexcept { return events_.load(std::memory_order_acquire); }

  // Handles one event (called by the reader thread; public for tests of the mapping).
  void handle(const ibv_async_event& event) noexcept;

 private:
  void run() noexcept;
  const Device* device_ = nullptr;
  bootstrap::Fd wake_;  // eventfd: stop() wakes the reader at once
  std::thread thread_;
  std::atomic<uint64_t> port_errors_{0};
  std::atomic<uint64_t> events_{0};
};

// "IBV_EVENT_PORT_ERR" etc.
std::string_view to_string(ibv_event_type type) noexcept;
// True for the QP events after which the QP is unusable (fatal, request and access errors).
bool is_fatal_qp_event(ibv_event_type type) noexcept;

}  // namespace rdmarepl::transport::verbs
