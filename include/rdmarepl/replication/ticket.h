// Data-path result types of the leader's write calls: cheap values, never exceptions.
#pragma once

#include <cstdint>
#include <string_view>

namespace rdmarepl::replication {

// Identifies one replicated write. Sequence numbers are per shard: the n-th write of shard s
// has seq n (starting at 1), so (shard, seq) is unique and a follower applies each shard in
// seq order. Tickets of one key are ordered by seq (a key always maps to one shard).
struct Ticket {
  uint32_t shard = 0;
  uint64_t seq = 0;
  friend bool operator==(const Ticket&, const Ticket&) = default;
};

enum class WriteStatus : uint8_t {
  ok = 0,
  too_large,   // key over kMaxKeyBytes or value over ChannelOptions::max_value_bytes
  stalled,     // the retained window stayed full for stall_timeout (a follower is slow)
  closed,      // the channel was closed
  not_leader,  // replicate()/erase() on a follower channel
  no_buffer,   // replicate(key, Buffer) with an empty Buffer (allocate() found none)
  // replicate_group(): the keys map to more than one shard (see shard_of()); nothing of the
  // group was replicated.
  group_spans_shards,
  // replicate_group(): no write in it, or its records exceed group_limit_bytes(); nothing of
  // the group was replicated.
  bad_group_size,
};
std::string_view describe(WriteStatus s) noexcept;

struct [[nodiscard]] WriteResult {
  Ticket ticket;
  WriteStatus status = WriteStatus::ok;
  [[nodiscard]] bool ok() const noexcept { return status == WriteStatus::ok; }
};

}  // namespace rdmarepl::replication
