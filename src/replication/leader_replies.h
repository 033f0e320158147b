// The leader's pollers: the followers' replies arrive as completions on the carriers
// (leader_carriers.h); each is checked (its MAC when keyed, its kind, its shard) and left in
// the link's mailbox (an acknowledgement) or handed to the catch-up thread (a checkpoint
// reply). A reply that fails a check fails the follower's session. No shard lock is taken.
// See docs/replication.md, "Carriers".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "leader_carriers.h"
#include "leader_shard.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

class LeaderReplies {
 public:
  // Everything passed must outlive this object; `carriers` and `shards` may be filled later.
  LeaderReplies(ChannelMetrics& metrics, const std::vector<std::unique_ptr<Shard>>& shards,
                const std::vector<std::unique_ptr<FollowerCarriers>>& carriers)
      : metrics_(metrics), shards_(shards), carriers_(carriers) {}

  // Pollers: drain the up carriers `i` (over every follower) with i % workers == worker.
  size_t poll(uint32_t worker, uint32_t workers) noexcept;
  // Drains one carrier's completions unless another thread is draining it.
  size_t poll_carrier(FollowerCarriers& fc, Carrier& c) noexcept;
  // Drains one connection the caller has to itself (c.mu held, or pooled). `c` is the slot
  // `conn` belongs to (its connection, or one pooled from it): what checks the replies' MACs.
  size_t drain(FollowerCarriers& fc, Carrier& c, transport::Connection& conn) noexcept;

 private:
  ChannelMetrics& metrics_;
  const std::vector<std::unique_ptr<Shard>>& shards_;
  const std::vector<std::unique_ptr<FollowerCarriers>>& carriers_;
};

}  // namespace rdmarepl::replication::detail
