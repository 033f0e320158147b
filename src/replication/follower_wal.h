// The follower's write-ahead log (ChannelOptions::wal_dir; without it every call is a
// no-op and a DurableStore's own position is the resume point): recovery at create() (the
// store and the applied seqs), logging each verified batch before it is applied,
// acknowledging only what the log has synced (Durability::batch), and the leader epoch
// file kept beside the log (leader_epoch_file.h). The Follower owns one FollowerLog; it
// calls nothing back. See docs/replication.md, "Durability".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "durability.h"
#include "follower_shard.h"
#include "leader_epoch_file.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

class FollowerLog {
 public:
  // Everything passed must outlive this object; `shards` may be filled after construction
  // (before open()); `endpoint` names the follower in messages.
  FollowerLog(const ChannelOptions& options, ChannelMetrics& metrics, const StoreHooks& hooks,
              const FollowerShards& shards, const transport::Endpoint& endpoint)
      : options_(options), metrics_(metrics), hooks_(hooks), shards_(shards), endpoint_(endpoint) {}
  FollowerLog(const FollowerLog&) = delete;
  FollowerLog& operator=(const FollowerLog&) = delete;

  // Opens the log and recovers the store and the shards' seqs from it (the shards must
  // exist).
  Status open();
  // Starts the log's threads.
  void start();
  void close() noexcept;
  [[nodiscard]] Wal* wal() const noexcept { return wal_.get(); }

  // Logs a verified batch before it is applied; false when the log failed. Shard lock held.
  bool append(FollowerShard& s, const BatchView& v, std::span<const std::byte> bytes) noexcept;
  // The seq this shard may acknowledge now. Shard lock held.
  uint64_t ack_seq(FollowerShard& s) noexcept;
  // The seq a (re)connecting leader resumes after: everything applied, or with
  // Durability::batch what the log has synced. Refreshes `acked`. Shard lock held.
  uint64_t resume_point(FollowerShard& s) noexcept;

  // The highest leader epoch accepted before a restart, from the log directory's leader
  // epoch file; at create(). Then stored_leader() holds it (epoch 0 when there was none).
  Status load_leader_epoch();
  [[nodiscard]] const AcceptedLeader& stored_leader() const noexcept { return stored_leader_; }
  // Makes leader `node` with `epoch` (accepted next) the highest one on disk before its
  // session starts; false (logged, naming `who`) when the file could not be written.
  bool persist_leader_epoch(const std::string& node, uint64_t epoch,
                            const std::string& who) noexcept;

 private:
  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  StoreHooks hooks_;
  const FollowerShards& shards_;
  const transport::Endpoint& endpoint_;
  std::unique_ptr<Wal> wal_;
  AcceptedLeader stored_leader_;  // what the leader epoch file holds (with a log)
};

}  // namespace rdmarepl::replication::detail
