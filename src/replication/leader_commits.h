// What the leader has committed under the ack mode, and everything that waits for it:
// committed(), wait(), wait_all_acked(), the away-policy failure, and the commit callbacks of
// on_commit(). The Leader owns one LeaderCommits and forwards its ChannelCore calls to it. See
// docs/replication.md, "Ack modes".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "commit_callbacks.h"
#include "durability.h"
#include "leader_shard.h"
#include "rdmarepl/replication/channel_metrics.h"

namespace rdmarepl::replication::detail {

class LeaderCommits {
 public:
  // Everything passed must outlive this object. `wal` is the leader's log slot (null without
  // wal_dir; it may be filled after construction); `core` is flushed and, with manual polling,
  // progressed by the waits.
  LeaderCommits(const ChannelOptions& options, ChannelMetrics& metrics,
                const std::vector<std::unique_ptr<Shard>>& shards, const std::atomic<bool>& closed,
                const std::unique_ptr<Wal>& wal, ChannelCore& core)
      : options_(options),
        metrics_(metrics),
        shards_(shards),
        closed_(closed),
        wal_(wal),
        core_(core) {}
  LeaderCommits(const LeaderCommits&) = delete;
  LeaderCommits& operator=(const LeaderCommits&) = delete;

  // Allocates the callback heaps (the channel's shards must exist).
  void init(uint32_t shards, size_t max_pending_callbacks);

  // Moves the commit point of `s` (under its lock) and records the commit latency of the
  // batches it passed.
  void update(Shard& s) noexcept;
  [[nodiscard]] bool committed(Ticket ticket) const noexcept;
  Status wait(Ticket ticket, std::chrono::milliseconds timeout);
  Status wait_all_acked(std::chrono::milliseconds timeout);

  // Commit callbacks (leader_callbacks.cc): registers, fires what is due (from
  // progress(); fails what cannot commit under AwayPolicy::fail), fails the rest on close.
  Status on_commit(Ticket ticket, CommitFn fn, void* ctx);
  size_t fire_callbacks() noexcept;
  void fail_callbacks_on_close() noexcept;

 private:
  [[nodiscard]] uint32_t required_acks() const noexcept;
  // The last seq of `s` known durable in the log (ack_mode=none with a gating log).
  uint64_t wal_durable_seq(Shard& s) noexcept;
  std::string describe_missing(const Shard& s, uint64_t seq) const;
  // With AwayPolicy::fail: the error when `seq` of `s` can no longer meet the ack mode
  // because too many followers have been away for away_timeout; ok otherwise.
  Status away_failure(const Shard& s, uint64_t seq) const;

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  const std::vector<std::unique_ptr<Shard>>& shards_;
  const std::atomic<bool>& closed_;
  const std::unique_ptr<Wal>& wal_;
  ChannelCore& core_;
  CommitCallbacks callbacks_;
};

}  // namespace rdmarepl::replication::detail
