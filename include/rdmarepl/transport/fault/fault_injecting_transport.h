// A Transport decorator that injects faults into the connections of any transport, for
// tests of the layers above (replication: dropped links, slow peers, failed and corrupt
// batches). Deterministic: every decision derives from FaultPlan::seed and the index of the
// write or completion it concerns, never from timing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::fault {

struct FaultPlan {
  uint64_t seed = 1;

  // Close the connection once this many write requests were posted on it (0: never). A batch
  // that crosses the limit is cut: its first writes are posted, then the connection is
  // closed and the rest complete as flushed.
  uint64_t drop_after_writes = 0;

  // Sleep before every post_writes() call, and hold every completion this long before
  // poll() hands it out.
  std::chrono::microseconds post_delay{0};
  std::chrono::microseconds completion_delay{0};

  // Replace the status of the n-th completion reaped on a connection (1-based; 0: never), or
  // of each completion with this probability, by `fail_status`; the connection then closes
  // and later completions are flushed, as after a real error.
  uint64_t fail_completion_index = 0;
  double fail_completion_probability = 0;
  WcStatus fail_status = WcStatus::remote_operation_error;

  // Flip one byte (random offset, random non-zero xor) of the payload of the n-th non-empty
  // write (1-based; 0: never), or of each non-empty write with this probability. The
  // caller's buffer is not modified: the payload is copied into a registered scratch slot
  // first. Writes longer than max_corrupt_bytes are left alone. Eight slots rotate, so at
  // most eight corrupted writes may be in flight at once.
  uint64_t corrupt_write_index = 0;
  double corrupt_probability = 0;
  uint32_t max_corrupt_bytes = 64 * 1024;

  // Which connections get the plan: those made by connect(), by accept(), or both.
  bool on_connect = true;
  bool on_accept = true;
};

struct FaultStats {
  uint64_t writes_posted = 0;
  uint64_t writes_corrupted = 0;
  uint64_t completions_failed = 0;
  bool dropped = false;
};

// A connection with faults injected. The data path does not allocate: every buffer is
// sized from the connection's queue depths when it is wrapped.
class FaultInjectingConnection final : public Connection {
 public:
  FaultInjectingConnection(std::unique_ptr<Connection> inner, const FaultPlan& plan, uint64_t seed,
                           std::unique_ptr<MemoryRegion> scratch_mr, std::vector<uint8_t> scratch,
                           uint32_t send_queue_depth, uint32_t recv_queue_depth);

  PostStatus post_writes(std::span<const WriteRequest> requests) noexcept override;
  PostStatus post_recvs(uint32_t count, uint64_t first_wr_id) noexcept override;
  // Sends and reads get post_delay; their completions are held, failed and flushed like
  // those of writes. Drops and corruption count writes only.
  PostStatus post_sends(std::span<const SendRequest> requests) noexcept override;
  PostStatus post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept override;
  PostStatus post_reads(std::span<const ReadRequest> requests) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;
  Status wait(std::chrono::milliseconds timeout) override;
  // The inner connection's descriptors; none while completions are held back (delay).
  int readiness(std::span<pollfd> out) noexcept override;
  void consume_readiness(std::span<const pollfd> fds) noexcept override {
    inner_->consume_readiness(fds);
  }
  [[nodiscard]] bool healthy() const noexcept override;
  [[nodiscard]] Error error() const override;
  [[nodiscard]] const PeerInfo& peer() const noexcept override { return inner_->peer(); }
  void close() noexcept override { inner_->close(); }
  Result<bool> resize_completions(uint32_t entries) override {
    return inner_->resize_completions(entries);
  }
  [[nodiscard]] uint32_t completion_entries() const noexcept override {
    return inner_->completion_entries();
  }

  [[nodiscard]] const FaultStats& stats() const noexcept { return stats_; }
  [[nodiscard]] Connection& inner() noexcept { return *inner_; }

 private:
  struct Held {
    Completion completion;
    uint64_t ready_ns = 0;
  };
  static constexpr size_t kCorruptSlots = 8;

  // A deterministic 64-bit value for (seed, stream, index).
  [[nodiscard]] uint64_t draw(uint64_t stream, uint64_t index) const noexcept;
  [[nodiscard]] bool chance(uint64_t stream, uint64_t index, double p) const noexcept;
  void corrupt(WriteRequest& w) noexcept;
  void hold(const Completion& c, uint64_t now) noexcept;
  void drain_inner(uint64_t now) noexcept;
  void inject_failure(Completion& c) noexcept;

  std::unique_ptr<Connection> inner_;
  FaultPlan plan_;
  uint64_t seed_;
  std::unique_ptr<MemoryRegion> scratch_mr_;
  std::vector<uint8_t> scratch_;
  size_t next_slot_ = 0;

  std::vector<WriteRequest> batch_;  // a modifiable copy of the posted batch
  std::vector<Held> held_;           // completions waiting to be handed out (ring)
  uint64_t held_head_ = 0;
  uint64_t held_tail_ = 0;

  uint64_t data_writes_ = 0;  // non-empty writes posted (corruption index)
  uint64_t completions_ = 0;  // completions reaped from the inner connection
  bool failed_ = false;
  Error error_;
  FaultStats stats_;
};

class FaultInjectingTransport final : public Transport {
 public:
  FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultPlan plan);

  // Applies to connections made from now on.
  void set_plan(const FaultPlan& plan) { plan_ = plan; }
  [[nodiscard]] const FaultPlan& plan() const noexcept { return plan_; }
  [[nodiscard]] Transport& inner() noexcept { return *inner_; }

  [[nodiscard]] std::string_view name() const noexcept override { return inner_->name(); }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, size_t length,
                                                        Access access) override {
    return inner_->register_memory(addr, length, access);
  }
  Result<RegisteredRegion> register_raw(void* addr, size_t length, Access access) override {
    return inner_->register_raw(addr, length, access);
  }
  void deregister_raw(const RegisteredRegion& region) noexcept override {
    inner_->deregister_raw(region);
  }
  Result<std::unique_ptr<Listener>> listen(const Endpoint& where) override;
  Result<std::unique_ptr<Connection>> connect(const Endpoint& where,
                                              const ConnectionOptions& options) override;

  // Wraps `conn` (made with `options`; `accepted` when a listener made it) according to
  // the current plan. Connections the plan does not cover are returned unwrapped.
  Result<std::unique_ptr<Connection>> wrap(std::unique_ptr<Connection> conn,
                                           const ConnectionOptions& options, bool accepted);

 private:
  std::unique_ptr<Transport> inner_;
  FaultPlan plan_;
  uint64_t connections_ = 0;
};

}  // namespace rdmarepl::transport::fault
