// The replication channel's write-ahead log: one wal::Log per channel (ChannelOptions::
// wal_dir) shared by its shards, the recovery of a store from it, the group-commit syncer
// (Durability::batch) and the background checkpointer. The leader and the follower engines
// call append() with the bytes of each batch exactly as they travel on the wire.
//
// Frames: every batch is one WAL frame whose first_seq = last_seq is the channel's frame
// number (1, 2, ... in append order, across shards) and whose record_count is the batch's.
// Per-shard seqs are inside the batch. A checkpoint's seq is the frame number it covers.
// See docs/wal_format.md ("Replication channel logs").
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/detail/channel_core.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/wal/log.h"

namespace rdmarepl::replication::detail {

// Checkpoint payload prefix written by the channel before the store's snapshot bytes:
//   magic u32 ("RCHS") | version u16 (1) | reserved u16 (0) | shard_count u32 |
//   reserved u32 (0) | shard_count x last seq u64
inline constexpr uint32_t kChannelCheckpointMagic = 0x52434853u;
inline constexpr size_t kChannelCheckpointFixed = 16;

// The per-shard last seqs in the channel prefix of a checkpoint payload (kChannelCheckpoint-
// Magic); Errc::corrupt or invalid_argument (another shard count) naming `what` otherwise.
// The store's snapshot bytes follow at kChannelCheckpointFixed + 8 * shards.
Result<std::vector<uint64_t>> parse_checkpoint_prefix(std::span<const uint8_t> payload,
                                                      uint32_t shards, const std::string& what);
// The same, read from the start of a checkpoint file (the reader is left after the seqs).
Result<std::vector<uint64_t>> read_checkpoint_prefix(wal::CheckpointReader& ck, uint32_t shards);
// Reads exactly out.size() bytes of the checkpoint's payload into `out`. When the payload
// ends first: Errc::corrupt, "checkpoint <path> <when_short>".
Status read_exact(wal::CheckpointReader& in, std::span<uint8_t> out, std::string_view when_short);

// Feeds bytes held in memory to Store::restore.
class SpanSnapshotReader final : public SnapshotReader {
 public:
  explicit SpanSnapshotReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  Result<size_t> read(void* data, size_t size) override;

 private:
  std::span<const uint8_t> bytes_;
};

class Wal {
 public:
  // The lsn append() returns when the log refused the batch (I/O failure): never durable.
  static constexpr uint64_t kFailed = std::numeric_limits<uint64_t>::max();

  // Called for each replayed batch after its new records were applied to the store.
  using BatchFn = std::function<void(const BatchView& batch, std::span<const std::byte> bytes)>;
  // Runs `fn` with every shard of the engine locked: nothing is between append and apply.
  using LockAllFn = std::function<void(const std::function<void()>& fn)>;

  struct Recovered {
    std::vector<uint64_t> shard_seq;  // highest seq recovered per shard (0: none)
    wal::RecoveryInfo info;
  };

  // Opens options.wal_dir and recovers the store from it (checkpoint, then frames).
  static Result<std::unique_ptr<Wal>> open(const ChannelOptions& options, const StoreHooks& store,
                                           const BatchFn& on_batch, Recovered* recovered,
                                           ChannelMetrics* metrics = nullptr);
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;
  ~Wal() { close(); }

  // Starts the syncer (Durability::batch) and the checkpointer (when the store has the
  // hooks and a trigger is set).
  void start(LockAllFn lock_all);
  // Stops the threads and closes the log (syncing what was written). Idempotent.
  void close() noexcept;

  // Data path: appends one sealed batch (write(2), no sync on this thread). Returns its lsn,
  // or kFailed (logged once) when the log failed: such a batch must never be sent or acked.
  uint64_t append(uint32_t shard, std::span<const std::byte> batch, uint64_t last_seq,
                  uint32_t record_count) noexcept;
  // The same for a batch held in pieces (a zero-copy batch: its head from the retained
  // window, its value from a pool buffer, its padding): the log holds the bytes of the wire.
  uint64_t append_gather(uint32_t shard, std::span<const iovec> pieces, uint64_t last_seq,
                         uint32_t record_count) noexcept;

  // True when the batch of `lsn` may be sent (leader) or acknowledged (follower): with
  // Durability::batch once an fdatasync covers it, otherwise once it was written.
  [[nodiscard]] bool durable(uint64_t lsn) const noexcept {
    if (lsn == kFailed) return false;
    return !gates_ || lsn <= log_->writer().durable_lsn();
  }
  [[nodiscard]] bool gates() const noexcept { return gates_; }

  // Takes a checkpoint now (the checkpointer does this when a trigger fires). Errc::
  // unsupported when the store has no snapshot hook.
  Status checkpoint();
  [[nodiscard]] uint64_t checkpoints() const noexcept {
    return checkpoints_.load(std::memory_order_relaxed);
  }
  // Catch-up: the number of the newest segment that every record of `shard` after seq
  // `after` is in or after (a reader may start there), or 0 (start at the oldest) when the
  // log does not remember that far back: it notes the per-shard seqs at the start of the
  // last kSegmentStarts segments written since it was opened.
  [[nodiscard]] uint64_t catchup_segment(uint32_t shard, uint64_t after) noexcept;
  static constexpr size_t kSegmentStarts = 64;

  // Installs a checkpoint payload received from the leader (channel prefix, then the store's
  // snapshot) as the newest state: runs `locked` (which restores the store and the engine's
  // seqs) with every shard locked and, when it succeeded, sets the log's per-shard seqs to
  // `seqs` and reserves a new frame number for the checkpoint; then, with no shard lock held,
  // writes the payload as this log's checkpoint of that frame (fsynced, renamed), so a
  // restart recovers from it and never replays the frames before it. The caller makes sure
  // no batch is appended until this returns. A failed write fails the log like a failed
  // append (nothing is acknowledged any more; restart the node).
  Status install_checkpoint(std::span<const uint8_t> payload, const std::vector<uint64_t>& seqs,
                            const std::function<Status()>& locked);
  // Tests: while held, the syncer starts no fdatasync (Durability::batch), so nothing new
  // becomes durable; release to resume.
  void hold_syncs(bool hold) noexcept;

  [[nodiscard]] wal::WriterStats stats() const noexcept { return log_->writer().stats(); }
  [[nodiscard]] const std::string& dir() const noexcept { return log_->dir(); }

 private:
  Wal(const ChannelOptions& options, const StoreHooks& store);
  void sync_loop() noexcept;
  void checkpoint_loop() noexcept;

  const ChannelOptions options_;
  const StoreHooks store_;
  const bool gates_;
  std::unique_ptr<wal::Log> log_;
  LockAllFn lock_all_;

  std::mutex append_mu_;             // frame numbers in append order; taken under the shard locks
  uint64_t frames_ = 0;              // last frame number appended
  std::vector<uint64_t> shard_seq_;  // last seq appended per shard
  bool failed_ = false;
  // Per segment opened by this writer, the last seq of each shard in the segments before it
  // (circular, kSegmentStarts entries allocated at open(); under append_mu_).
  struct SegmentStart {
    uint64_t segment = 0;
    std::vector<uint64_t> seqs;
  };
  std::vector<SegmentStart> starts_;
  size_t starts_count_ = 0;  // entries written so far (the newest is (count - 1) % size)
  void note_segment_start(uint64_t segment) noexcept;

  std::mutex mu_;                    // threads
  std::condition_variable cv_;       // checkpointer: stop
  std::condition_variable sync_cv_;  // syncer: pending_, hold_, stop
  bool pending_ = false;             // written but not yet synced (syncer)
  bool stop_ = false;
  bool closed_ = false;
  bool hold_ = false;
  std::thread syncer_;
  std::thread checkpointer_;

  std::mutex checkpoint_mu_;
  uint64_t checkpoint_frame_ = 0;  // frame number the newest checkpoint covers
  uint64_t checkpoint_bytes_ = 0;  // writer bytes when it was taken
  std::chrono::steady_clock::time_point checkpoint_time_;
  std::atomic<uint64_t> checkpoints_{0};
};

}  // namespace rdmarepl::replication::detail
