// The follower's side of checkpoint shipping: chunks arrive in a shard's large-record
// buffer (one in flight), are checked and copied aside by the shard's IncomingCheckpoint
// (follower_chunks.h) and answered; the first handshake thread installs a complete
// checkpoint (Store::restore and the seqs with every shard locked, then the follower's own
// log) and answers its last chunk. The Follower owns one ShippedCheckpoints, beside the
// sessions and the log it uses; it calls nothing back. See docs/wire_format.md
// ("Checkpoint shipping") and docs/replication.md ("Durability").
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_ship.h"
#include "follower_sessions.h"
#include "follower_shard.h"
#include "follower_wal.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

class ShippedCheckpoints {
 public:
  // Everything passed must outlive this object; `shards` may be filled after construction.
  ShippedCheckpoints(const ChannelOptions& options, ChannelMetrics& metrics,
                     const StoreHooks& hooks, const FollowerShards& shards, FollowerLog& log,
                     FollowerSessions& sessions, const transport::Endpoint& endpoint)
      : options_(options),
        metrics_(metrics),
        hooks_(hooks),
        shards_(shards),
        log_(log),
        sessions_(sessions),
        endpoint_(endpoint) {}
  ShippedCheckpoints(const ShippedCheckpoints&) = delete;
  ShippedCheckpoints& operator=(const ShippedCheckpoints&) = delete;

  // Poller: stores the chunk of `byte_len` bytes in the large-record buffer of `s` (shard
  // lock held); false (and `why`; `protocol` says whether the leader broke the protocol)
  // when the connection must be dropped.
  bool handle_chunk(FollowerShard& s, uint32_t byte_len, std::string& why, bool& protocol) noexcept;
  // True (once) when the last chunk of a checkpoint arrived since the previous call.
  bool waiting() noexcept { return ready_.exchange(false, std::memory_order_acq_rel); }
  // First handshake thread (install lock held): installs the checkpoints whose last chunk
  // arrived, then replies.
  void install_shipped() noexcept;

 private:
  // The first chunk of checkpoint `id` of `total` bytes arrived: makes room for it. False
  // when there is no memory for it (the leader is answered ShipReply::failed).
  bool start_checkpoint(FollowerShard& s, uint64_t id, uint64_t total) noexcept;
  // Answers a chunk with `reply`; false (and `why`) when that failed.
  bool reply_to_chunk(FollowerShard& s, ShipReply reply, std::string& why, bool& protocol) noexcept;
  static bool send_reply(FollowerShard& s, ShipReply reply) noexcept;
  Status install_payload(uint32_t shard, std::span<const uint8_t> payload);
  // With every shard locked: ends the session, restores the store from `snapshot` and moves
  // every shard to `seqs`.
  Status restore(uint32_t shard, std::span<const uint8_t> snapshot,
                 const std::vector<uint64_t>& seqs);
  // Answers the last chunk of the checkpoint installed on `s` (`st`: how that went).
  void answer_install(FollowerShard& s, const Status& st) noexcept;

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  StoreHooks hooks_;
  const FollowerShards& shards_;
  FollowerLog& log_;
  FollowerSessions& sessions_;
  const transport::Endpoint& endpoint_;
  // Set by the poller when a checkpoint's last chunk arrived.
  std::atomic<bool> ready_{false};
};

}  // namespace rdmarepl::replication::detail
