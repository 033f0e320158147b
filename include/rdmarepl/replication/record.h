// What a follower's store receives: one replicated write. Records are decoded in place from
// a batch; the string_views point into the receive ring and are valid only during the
// Store::apply call that receives them.
#pragma once

#include <cstdint>
#include <string_view>

namespace rdmarepl::replication {

// Wire values of the record op (docs/wire_format.md, "Replication batches"). Never renumber.
enum class Op : uint8_t {
  put = 1,
  erase = 2,
};

// Keys are limited to 64 KiB so that a key always fits in one record with room to spare;
// values are limited per channel (ChannelOptions::max_value_bytes, 16 MiB by default) and by
// the format to 2^32 - 1 bytes.
inline constexpr uint32_t kMaxKeyBytes = 64 * 1024;

struct Record {
  Op op = Op::put;
  std::string_view key;
  std::string_view value;  // empty for erase
  uint64_t seq = 0;        // per-shard sequence number, starting at 1
  uint64_t timestamp = 0;  // wall-clock nanoseconds when the leader accepted the write
  uint32_t shard = 0;
};

// One write of a group passed to ReplicationChannel::replicate_group(): a put (key, value) or
// an erase (key; value ignored). The views need to live only during the call.
struct GroupOp {
  Op op = Op::put;
  std::string_view key;
  std::string_view value;
};

}  // namespace rdmarepl::replication
