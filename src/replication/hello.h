// The replication layer's part of the connection handshake, carried in
// ConnectionOptions::app_data (docs/wire_format.md, "Replication handshake").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::replication::detail {

// Leader -> follower, one per connection: which carrier of which session it is. A session
// is the set of connections (carriers) one leader keeps to one follower; they all carry any
// shard (the immediate names it). Carrier 0 starts a session.
struct LeaderHello {
  uint32_t carrier = 0;
  uint32_t session = 0;
  uint32_t shard_count = 0;
  uint32_t queue_depth = 0;  // batches the leader keeps in flight at most (+ slack)
  uint64_t ring_bytes = 0;   // the ring size the leader's batching assumes (minimum)
  uint64_t large_bytes = 0;  // the largest batch it may write to the large-record buffer
  // ChannelOptions::leader_epoch: a follower refuses a leader of another identity (node id)
  // whose epoch is not above the live leader's (docs/replication.md, "Leader identity").
  uint64_t epoch = 0;
};

// Follower -> leader: its buffers and, per shard, the last seq it applied (the resume point)
// and the buffer generation (0 or 1) this connection must write to: the follower registers
// two rings and two large-record buffers per shard and a new connection always writes to the
// pair the shard's current connection does not use (docs/replication.md, "Reconnecting").
struct FollowerHello {
  uint32_t shard_count = 0;
  uint32_t queue_depth = 0;  // receives it posts per connection (minus slack)
  uint64_t ring_bytes = 0;
  uint64_t large_bytes = 0;
  std::vector<uint64_t> applied;    // shard_count entries
  std::vector<uint8_t> generation;  // shard_count entries, each 0 or 1 (missing ones encode 0)
};

// Buffer generations per shard on a follower; its regions are advertised as rings of
// generation 0 (one per shard), rings of generation 1, large-record buffers of generation 0,
// large-record buffers of generation 1.
inline constexpr uint32_t kBufferGenerations = 2;

std::string encode(const LeaderHello& h);
std::string encode(const FollowerHello& h);
// `peer` names the sender in error messages (Errc::protocol_error).
Result<LeaderHello> parse_leader_hello(std::string_view bytes, std::string_view peer);
Result<FollowerHello> parse_follower_hello(std::string_view bytes, std::string_view peer);

}  // namespace rdmarepl::replication::detail
