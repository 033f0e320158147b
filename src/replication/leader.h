// The leader engine: per shard, a retained window (registered) into which records are
// encoded once, batch descriptors, and one Link per follower (connection, ring credits,
// in-flight batches, acknowledged seq). See docs/replication.md.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_ship.h"
#include "commit_callbacks.h"
#include "core_base.h"
#include "durability.h"
#include "hello.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "registered_buffer.h"
#include "ring_space.h"

namespace rdmarepl::replication::detail {

class Leader final : public CoreBase {
 public:
  static Result<std::unique_ptr<ChannelCore>> create(const ChannelOptions& options,
                                                     std::unique_ptr<transport::Transport> t,
                                                     const StoreHooks& store);
  ~Leader() override { close(); }

  WriteResult write(Op op, std::string_view key, std::string_view value) noexcept override;
  void flush() noexcept override;
  [[nodiscard]] bool committed(Ticket ticket) const noexcept override;
  Status wait(Ticket ticket, std::chrono::milliseconds timeout) override;
  Status wait_all_acked(std::chrono::milliseconds timeout) override;
  Status on_commit(Ticket ticket, CommitFn fn, void* ctx) override;
  size_t progress() noexcept override;
  void close() noexcept override;

 protected:
  void wait_for_work(std::chrono::microseconds timeout) noexcept override;
  // Live knobs (leader_knobs.cc).
  size_t progress_worker(uint32_t worker, uint32_t workers) noexcept override;
  void limit_engine_knobs(const tuning::Knobs& want, tuning::Knobs& effective) const override;
  void apply_engine_knobs(const tuning::Knobs& effective) noexcept override;
  void value_totals(double& count, double& sum, double& sq) const noexcept override;

 public:
  [[nodiscard]] transport::Endpoint local_endpoint() const override { return {}; }
  [[nodiscard]] uint64_t last_seq(uint32_t shard) const noexcept override;
  [[nodiscard]] uint64_t applied_seq(uint32_t) const noexcept override { return 0; }

 private:
  struct InFlight {
    uint64_t last_seq = 0;
    uint64_t ring_consumed = 0;  // 0 for a batch in the large-record buffer
    bool large = false;
  };

  // One follower as seen from one shard. Fields without atomics are guarded by Shard::mu.
  struct Link {
    uint32_t follower = 0;
    std::unique_ptr<transport::Connection> conn;
    transport::RemoteRegion ring;
    transport::RemoteRegion large;
    RingSpace ring_space;
    std::vector<InFlight> inflight;  // circular, queue_depth entries
    size_t inflight_head = 0;
    size_t inflight_count = 0;
    bool large_busy = false;
    bool stalled = false;
    uint64_t next_send_bn = 0;
    std::atomic<uint64_t> acked_seq{0};
    std::atomic<bool> up{false};
    std::atomic<uint64_t> down_since_ns{0};
    bool ever_connected = false;
    // Its resume point is older than the retained window: batches come from the write-ahead
    // log (catch-up thread) until the window reaches it; send_pending() skips it meanwhile.
    bool wal_catchup = false;
    uint64_t generation = 0;  // connections installed so far (a catch-up pass is per connection)
    // A checkpoint is being shipped on this connection (catch-up thread); the follower's
    // replies to its chunks so far and the last one (poll_link()).
    bool shipping = false;
    uint32_t ship_replies = 0;
    uint32_t ship_reply = 0;
    // Control thread only.
    uint64_t next_attempt_ns = 0;
    uint64_t backoff_ns = 0;  // wait after the last failed attempt; 0 after a success
    std::string last_error;
  };

  struct BatchDesc {
    uint64_t offset = 0;    // in the window
    uint64_t len = 0;       // padded batch size
    uint64_t consumed = 0;  // window bytes, skipped tail included
    uint64_t first_seq = 0;
    uint32_t count = 0;
    bool large = false;
    uint64_t t0_ns = 0;  // when its first record was accepted
    uint64_t lsn = 0;    // its write-ahead log ticket (0 without a log or when recovered)
    [[nodiscard]] uint64_t last_seq() const noexcept { return first_seq + count - 1; }
  };

  struct Shard {
    std::mutex mu;
    uint32_t index = 0;
    RegisteredBuffer window;
    RegisteredBuffer ack_target;  // what followers' imm-only acks are addressed to
    RegisteredBuffer staging;     // one batch read back from the log (catch-up), with wal_dir
    RingSpace space;
    std::vector<BatchDesc> descs;  // circular by batch number
    uint64_t first_bn = 0;         // oldest retained batch
    uint64_t end_bn = 0;           // next batch number to seal
    uint64_t latency_bn = 0;       // next batch whose commit latency is not yet recorded
    BatchBuilder open;
    bool open_active = false;
    bool open_large = false;  // the open batch holds one record for the large-record buffer
    uint64_t open_offset = 0;
    uint64_t open_consumed = 0;
    uint64_t open_t0 = 0;
    std::atomic<uint64_t> next_seq{1};
    std::atomic<uint64_t> committed{0};
    // Value sizes accepted (written under mu, read by the tuner's observer).
    std::atomic<uint64_t> value_count{0};
    std::atomic<double> value_sum{0};
    std::atomic<double> value_sq{0};
    // Writers blocked on mu: a blocking poller does not start a wait while one is.
    std::atomic<uint32_t> writers_waiting{0};
    uint64_t durable_bn = 0;  // first batch not yet known durable (write-ahead log)
    uint64_t durable_seq = 0;
    std::vector<std::unique_ptr<Link>> links;
  };

  Leader(const ChannelOptions& options, std::unique_ptr<transport::Transport> t,
         const StoreHooks& store)
      : CoreBase(options, std::move(t)), store_(store) {}

  BatchDesc& desc(Shard& s, uint64_t bn) noexcept { return s.descs[bn % s.descs.size()]; }
  enum class Room : uint8_t { ok, evicted, stalled };
  Room make_room(Shard& s, uint64_t len) noexcept;
  bool evict_oldest(Shard& s) noexcept;
  bool extend_room(Shard& s, uint64_t delta) noexcept;
  void seal_open(Shard& s) noexcept;
  void push_desc(Shard& s, const BatchDesc& d) noexcept;
  void send_pending(Shard& s) noexcept;
  size_t poll_shard(Shard& s) noexcept;
  size_t poll_link(Shard& s, Link& l) noexcept;
  void update_committed(Shard& s) noexcept;
  void link_down(Shard& s, Link& l, std::string_view why) noexcept;
  [[nodiscard]] uint32_t required_acks() const noexcept;
  [[nodiscard]] bool large_record(size_t key_len, size_t value_len) const noexcept;
  size_t progress_locked(Shard& s) noexcept;

  // Control plane (leader_connect.cc).
  void control_loop() noexcept;
  bool try_connect(Shard& s, Link& l) noexcept;
  Status install(Shard& s, Link& l, std::unique_ptr<transport::Connection> conn,
                 const FollowerHello& hello);
  std::string describe_missing(const Shard& s, uint64_t seq) const;
  // With AwayPolicy::fail: the error when `seq` of `s` can no longer meet the ack mode
  // because too many followers have been away for away_timeout; ok otherwise.
  Status away_failure(const Shard& s, uint64_t seq) const;

  // Commit callbacks (leader_callbacks.cc): fires what is due, fails what cannot commit.
  size_t fire_callbacks() noexcept;
  void fail_callbacks_on_close() noexcept;
  CommitCallbacks callbacks_;

  // Write-ahead log (leader_wal.cc; all no-ops without ChannelOptions::wal_dir).
  Status open_wal();  // recovers the store, the seqs and the retained window
  void start_wal();
  void wal_seal(Shard& s, BatchDesc& d) noexcept;
  [[nodiscard]] bool wal_sendable(const BatchDesc& d) const noexcept;
  uint64_t wal_durable_seq(Shard& s) noexcept;
  void recover_batch(const BatchView& v, std::span<const std::byte> bytes) noexcept;
  // Where a follower resuming after `resume` continues: the window's batch number, or
  // nullopt when the window no longer reaches back that far.
  std::optional<uint64_t> window_resume(const Shard& s, uint64_t resume) const noexcept;
  // The catch-up thread: streams logged batches to links with wal_catchup set.
  void catchup_loop() noexcept;
  bool catchup_link(Shard& s, Link& l) noexcept;
  // True once the catch-up pass that serves connection `generation` of `l` must end: the
  // link went down, left catch-up, or reconnected (the next pass starts over). Called with
  // Shard::mu held.
  static bool catchup_over(const Link& l, uint64_t generation) noexcept;
  // Ships the newest checkpoint to a follower that needs shard `s` after `acked`, which the
  // log no longer holds. Ok once the follower installed it (its acked seq moved to the
  // checkpoint's); otherwise the reason, and the link is down or the pass is over.
  Status ship_checkpoint(Shard& s, Link& l, uint64_t generation, uint64_t acked);
  // Rate limit of catch-up (ChannelOptions::catchup_bytes_per_sec): sleeps, with no lock
  // held, until `bytes` may be sent. False when the channel is stopping.
  bool pace_catchup(uint64_t bytes) noexcept;
  TokenBucket catchup_bucket_;  // catch-up thread only
  std::thread catchup_;

 public:
  // Tests and tools: the log (null without wal_dir).
  [[nodiscard]] Wal* wal() const noexcept { return wal_.get(); }

 private:
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> closed_{false};
  uint64_t large_bytes_ = 0;  // largest batch for the large-record buffer

  // Live knobs read on the data path (set by apply_engine_knobs()); see leader_knobs.cc.
  void init_live_knobs() noexcept;
  void count_value(Shard& s, size_t value_len) noexcept;
  void lock_as_writer(Shard& s, std::unique_lock<std::mutex>& lock) noexcept;
  [[nodiscard]] bool within_pool(const Shard& s, uint64_t len) const noexcept;
  std::atomic<uint64_t> live_batch_bytes_{0};
  std::atomic<uint64_t> live_flush_ns_{0};
  std::atomic<uint64_t> window_limit_{0};  // usable bytes of each shard's retained window
  StoreHooks store_;
  std::unique_ptr<Wal> wal_;
};

}  // namespace rdmarepl::replication::detail
