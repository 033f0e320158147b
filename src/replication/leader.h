// The leader engine: per shard (leader_shard.h), a retained window (retained_window.h) into
// which records are encoded once, and one Link per follower (leader_link.h: connection, ring
// credits, in-flight batches, acknowledged seq); catch-up from the write-ahead log runs in
// leader_catchup.h; the commit point and the waits on it in leader_commits.h; the sessions
// with the followers and their carriers in leader_sessions.h; zero-copy and store-region
// values in leader_gathered.h. See docs/replication.md.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core_base.h"
#include "durability.h"
#include "hello.h"
#include "leader_carriers.h"
#include "leader_catchup.h"
#include "leader_commits.h"
#include "leader_gathered.h"
#include "leader_sessions.h"
#include "leader_shard.h"
#include "leader_wal.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "ring_space.h"

namespace rdmarepl::replication::detail {

class Leader final : public CoreBase, private LogHost, private SessionHost, private GatheredHost {
 public:
  static Result<std::unique_ptr<ChannelCore>> create(const ChannelOptions& options,
                                                     std::unique_ptr<transport::Transport> t,
                                                     const StoreHooks& store);
  ~Leader() override { close(); }

  WriteResult write(Op op, std::string_view key, std::string_view value) noexcept override;
  // Write groups (leader_group.cc).
  WriteResult write_group(std::span<const GroupOp> ops) noexcept override;
  // Zero-copy values and the store's own regions live in GatheredWrites (leader_gathered.h).
  [[nodiscard]] memory::Buffer allocate(size_t size) noexcept override {
    return writes_.allocate(size);
  }
  WriteResult write_buffer(std::string_view key, memory::Buffer&& value) noexcept override {
    return writes_.write_buffer(key, std::move(value));
  }
  [[nodiscard]] memory::MemoryStats memory_stats() const override { return writes_.memory_stats(); }
  [[nodiscard]] size_t zero_copy_retained() const override { return writes_.zero_copy_retained(); }
  Status register_region(const void* addr, size_t length) override {
    return writes_.register_region(addr, length);
  }
  Status unregister_region(const void* addr, std::chrono::milliseconds timeout) override {
    return writes_.unregister_region(addr, timeout);
  }
  [[nodiscard]] size_t region_references(const void* addr) const override {
    return writes_.region_references(addr);
  }
  void flush() noexcept override;
  // Commit tracking and waiting live in LeaderCommits (leader_commits.h).
  [[nodiscard]] bool committed(Ticket ticket) const noexcept override {
    return commits_.committed(ticket);
  }
  Status wait(Ticket ticket, std::chrono::milliseconds timeout) override {
    return commits_.wait(ticket, timeout);
  }
  Status wait_all_acked(std::chrono::milliseconds timeout) override {
    return commits_.wait_all_acked(timeout);
  }
  Status on_commit(Ticket ticket, CommitFn fn, void* ctx) override {
    return commits_.on_commit(ticket, fn, ctx);
  }
  size_t progress() noexcept override;
  void close() noexcept override;

 protected:
  void wait_for_work(std::chrono::microseconds timeout) noexcept override;
  // Live knobs (leader_knobs.cc).
  size_t progress_worker(uint32_t worker, uint32_t workers) noexcept override;
  void limit_engine_knobs(const tuning::Knobs& want, tuning::Knobs& effective) const override;
  void apply_engine_knobs(const tuning::Knobs& effective) noexcept override;
  void value_totals(double& count, double& sum, double& sq) const noexcept override;
  void shard_metrics(MetricsSnapshot& m) const override;

 public:
  [[nodiscard]] transport::Endpoint local_endpoint() const override { return {}; }
  [[nodiscard]] uint64_t last_seq(uint32_t shard) const noexcept override;
  [[nodiscard]] uint64_t applied_seq(uint32_t) const noexcept override { return 0; }

 private:
  Leader(const ChannelOptions& options, std::unique_ptr<transport::Transport> t,
         const StoreHooks& store)
      : CoreBase(options, std::move(t)),
        writes_(options_, metrics_, shards_, closed_, static_cast<GatheredHost&>(*this)),
        sessions_(options_, metrics_, *transport_, memory_, shards_, closed_, wal_,
                  static_cast<SessionHost&>(*this)),
        log_(options_, metrics_, memory_, store, shards_, wal_, static_cast<LogHost&>(*this)),
        commits_(options_, metrics_, shards_, closed_, wal_, *this) {}

  // Whether the oldest batch `d` of `s` may leave the retained window: durable, and no
  // connected follower that takes from the window still needs it (one catching up from the
  // log reads it back from there).
  [[nodiscard]] bool evictable(const Shard& s, const BatchDesc& d) const noexcept;
  RetainedWindow::Room make_room(Shard& s, uint64_t len) noexcept override;
  // Places the open batch for one more record of `rec` bytes (`large`: alone), sealing and
  // sending what is in the way; waits up to stall_timeout while the window is full. ok,
  // stalled or closed.
  WriteStatus reserve(Shard& s, std::unique_lock<std::mutex>& lock, size_t rec,
                      bool large) noexcept;
  void seal_open(Shard& s) noexcept;
  WriteStatus check_group(std::span<const GroupOp> ops, uint32_t& shard,
                          size_t& bytes) const noexcept;
  // A record alone in its batch whose value (`lkey`) is gathered and kept in the window by
  // `held` (a pool Buffer or a store region's Pin) until eviction; sealing that batch.
  WriteResult write_gathered(std::string_view key, std::span<const std::byte> value, uint32_t lkey,
                             HeldValue&& held) noexcept override;
  void seal_gathered(Shard& s, std::span<const std::byte> value, uint32_t lkey,
                     HeldValue&& held) noexcept;
  // The local segments of batch `d`: its bytes in the window, or a gathered batch's head,
  // value and padding.
  [[nodiscard]] transport::WriteRequest batch_bytes(const Shard& s,
                                                    const BatchDesc& d) const noexcept override;
  void push_desc(Shard& s, const BatchDesc& d) noexcept;
  void send_pending(Shard& s) noexcept override;
  // Processes the newest acknowledgement the poller left for `l` (shard lock held).
  void take_ack(Shard& s, Link& l) noexcept;
  void link_down(Shard& s, Link& l, std::string_view why) noexcept override;
  size_t progress_locked(Shard& s) noexcept;

  // The control thread: the store regions' upkeep, and each follower's session
  // (LeaderSessions::tend()).
  void control_loop() noexcept;

  // Write-ahead: whether `d` may be sent and evicted (LeaderLog::sendable()).
  [[nodiscard]] bool wal_sendable(const BatchDesc& d) const noexcept override {
    return log_.sendable(d);
  }

 public:
  // Tests and tools: the log (null without wal_dir).
  [[nodiscard]] Wal* wal() const noexcept { return wal_.get(); }

 private:
  // Declared before shards_: the windows' zero-copy Buffers and region Pins go back to the
  // pool and regions it owns before they go.
  GatheredWrites writes_;
  // The followers' sessions and carriers (declared before shards_: the links point to
  // them).
  LeaderSessions sessions_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> closed_{false};

  // Live knobs read on the data path (set by apply_engine_knobs()); see leader_knobs.cc.
  void init_live_knobs() noexcept;
  std::atomic<uint64_t> live_batch_bytes_{0};
  std::atomic<uint64_t> live_flush_ns_{0};
  std::atomic<uint64_t> window_limit_{0};  // usable bytes of each shard's retained window
  // The log (null without wal_dir), then what recovers, appends to and catches up from it
  // (its catch-up thread goes before the log does).
  std::unique_ptr<Wal> wal_;
  LeaderLog log_;
  // The commit point under the ack mode, waits and commit callbacks (after the members it
  // refers to).
  LeaderCommits commits_;
};

}  // namespace rdmarepl::replication::detail
