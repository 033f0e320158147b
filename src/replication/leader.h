// The leader engine: per shard (leader_shard.h), a retained window (retained_window.h) into
// which records are encoded once, and one Link per follower (leader_link.h: connection, ring
// credits, in-flight batches, acknowledged seq); catch-up from the write-ahead log runs in
// leader_catchup.h; the commit point and the waits on it in leader_commits.h. See
// docs/replication.md.
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
#include "leader_shard.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "registered_buffer.h"
#include "ring_space.h"
#include "store_regions.h"

namespace rdmarepl::replication::detail {

class Leader final : public CoreBase, private CatchUpHost {
 public:
  static Result<std::unique_ptr<ChannelCore>> create(const ChannelOptions& options,
                                                     std::unique_ptr<transport::Transport> t,
                                                     const StoreHooks& store);
  ~Leader() override { close(); }

  WriteResult write(Op op, std::string_view key, std::string_view value) noexcept override;
  // Write groups (leader_group.cc).
  WriteResult write_group(std::span<const GroupOp> ops) noexcept override;
  // Zero-copy values (leader_zero_copy.cc).
  [[nodiscard]] memory::Buffer allocate(size_t size) noexcept override;
  WriteResult write_buffer(std::string_view key, memory::Buffer&& value) noexcept override;
  [[nodiscard]] memory::MemoryStats memory_stats() const override;
  [[nodiscard]] size_t zero_copy_retained() const override;
  // The store's own regions (leader_regions.cc).
  Status register_region(const void* addr, size_t length) override;
  Status unregister_region(const void* addr, std::chrono::milliseconds timeout) override;
  [[nodiscard]] size_t region_references(const void* addr) const override;
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
        store_(store),
        commits_(options_, metrics_, shards_, closed_, wal_, *this) {}

  // Whether the oldest batch `d` of `s` may leave the retained window: durable, and no
  // connected follower that takes from the window still needs it (one catching up from the
  // log reads it back from there).
  [[nodiscard]] bool evictable(const Shard& s, const BatchDesc& d) const noexcept;
  RetainedWindow::Room make_room(Shard& s, uint64_t len) noexcept;
  // Places the open batch for one more record of `rec` bytes (`large`: alone), sealing and
  // sending what is in the way; waits up to stall_timeout while the window is full. ok,
  // stalled or closed.
  WriteStatus reserve(Shard& s, std::unique_lock<std::mutex>& lock, size_t rec,
                      bool large) noexcept;
  void seal_open(Shard& s) noexcept;
  WriteStatus check_group(std::span<const GroupOp> ops, uint32_t& shard,
                          size_t& bytes) const noexcept;
  // Zero-copy (leader_zero_copy.cc): the pool, registered once; sealing the open batch
  // that holds one record whose value stays in `value`; the local segments of a batch.
  Status open_pool();
  // Evicts the oldest batches every follower (connected or not) acknowledged, while the
  // window holds zero-copy buffers, so that their values go back to the pool promptly.
  void release_acked_values(Shard& s) noexcept;
  // A record alone in its batch whose value (`lkey`) is gathered and kept in the window by
  // `held` (a pool Buffer or a store region's Pin) until eviction.
  WriteResult write_gathered(std::string_view key, std::span<const std::byte> value, uint32_t lkey,
                             HeldValue&& held) noexcept;
  void seal_gathered(Shard& s, std::span<const std::byte> value, uint32_t lkey,
                     HeldValue&& held) noexcept;
  // A put whose value lies in a registered store region: gathered (true, `r` set) or not
  // (false: the caller copies it).
  bool write_from_region(std::string_view key, std::string_view value, WriteResult& r) noexcept;
  [[nodiscard]] transport::WriteRequest batch_bytes(const Shard& s,
                                                    const BatchDesc& d) const noexcept;
  void push_desc(Shard& s, const BatchDesc& d) noexcept;
  void send_pending(Shard& s) noexcept override;
  // Drains one carrier's completions into its links' mailboxes (no shard lock needed).
  size_t poll_carrier(FollowerCarriers& fc, Carrier& c) noexcept;
  // The same for one connection the caller has to itself (mu held, or pooled).
  // `c` is the slot `conn` belongs to (its connection, or one pooled from it): what checks
  // the replies' MACs.
  size_t drain_carrier(FollowerCarriers& fc, Carrier& c, transport::Connection& conn) noexcept;
  size_t poll_carriers(uint32_t worker, uint32_t workers) noexcept;
  // Processes the newest acknowledgement the poller left for `l` (shard lock held).
  void take_ack(Shard& s, Link& l) noexcept;
  void link_down(Shard& s, Link& l, std::string_view why) noexcept override;
  size_t progress_locked(Shard& s) noexcept;

  // Control plane (leader_connect.cc).
  void control_loop() noexcept;
  // A session with follower `fc`: carrier 0 with the handshake, then every shard's link.
  bool start_session(FollowerCarriers& fc) noexcept;
  // Takes every link of the follower down and closes its carriers.
  void end_session(FollowerCarriers& fc) noexcept;
  // Connects carriers below N that are not up; counts idle ones taken back from the pool.
  void adjust_carriers(FollowerCarriers& fc) noexcept;
  // Releases carrier `c` (at or above N) to the QP manager's pool when no shard uses it.
  void pool_idle(FollowerCarriers& fc, uint32_t k) noexcept;
  // Resizes the completion queues of carriers 0..n-1 to the QP manager's share for N = n.
  void fit_carriers(FollowerCarriers& fc, uint32_t n) noexcept;
  Result<std::unique_ptr<transport::Connection>> connect_carrier(FollowerCarriers& fc,
                                                                 uint32_t k) noexcept;
  void close_carriers(FollowerCarriers& fc) noexcept;
  // Why the handshake `fh` of follower `peer` (connection `info`) does not fit this leader;
  // ok when it does.
  // Whether the tag of the reply `e` (an acknowledgement or checkpoint reply that arrived on
  // `c`) is right; caller holds c.mu, before the receive it consumed is posted again.
  static bool authentic(Carrier& c, const transport::Completion& e) noexcept;
  // With a pre-shared key: the tag slots of `fc`'s carriers (create()).
  Status init_tags(FollowerCarriers& fc);
  // A new connection on `c`: its writes are authenticated with its session key (if keyed).
  void arm(FollowerCarriers& fc, Carrier& c) noexcept;
  Status check_hello(const transport::Endpoint& peer, const transport::PeerInfo& info,
                     const Result<FollowerHello>& fh) const;
  // Starts the link of `s` to a follower in a new session (its carrier 0 is up).
  Status install(Shard& s, Link& l, const FollowerHello& hello);

  // Write-ahead log (leader_wal.cc; all no-ops without ChannelOptions::wal_dir).
  Status open_wal();  // recovers the store, the seqs and the retained window
  void start_wal();
  void wal_seal(Shard& s, BatchDesc& d) noexcept;
  [[nodiscard]] bool wal_sendable(const BatchDesc& d) const noexcept;
  // Puts a replayed batch back into the retained window; false when these options cannot
  // send it (written under a larger ring_bytes or max_value_bytes).
  bool recover_batch(const BatchView& v, std::span<const std::byte> bytes) noexcept;

 public:
  // Tests and tools: the log (null without wal_dir).
  [[nodiscard]] Wal* wal() const noexcept { return wal_.get(); }

 private:
  // Declared before shards_: the windows' zero-copy Buffers and region Pins go back to them
  // before they go.
  std::unique_ptr<StoreRegions> regions_;
  std::unique_ptr<memory::SlabPool> pool_;
  RegisteredBuffer zeros_;  // the padding gathered after a zero-copy value
  // One per follower (declared before shards_: the links point to them).
  std::vector<std::unique_ptr<FollowerCarriers>> carriers_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> closed_{false};

  // Live knobs read on the data path (set by apply_engine_knobs()); see leader_knobs.cc.
  void init_live_knobs() noexcept;
  void count_value(Shard& s, size_t value_len) noexcept;
  void lock_as_writer(Shard& s, std::unique_lock<std::mutex>& lock) noexcept;
  std::atomic<uint64_t> live_batch_bytes_{0};
  std::atomic<uint64_t> live_flush_ns_{0};
  std::atomic<uint64_t> window_limit_{0};  // usable bytes of each shard's retained window
  StoreHooks store_;
  std::unique_ptr<Wal> wal_;
  // Catch-up of followers older than the window, from the log (null without wal_dir).
  std::unique_ptr<CatchUp> catchup_;
  // The commit point under the ack mode, waits and commit callbacks (after the members it
  // refers to).
  LeaderCommits commits_;
};

}  // namespace rdmarepl::replication::detail
