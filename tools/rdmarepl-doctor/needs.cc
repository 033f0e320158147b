#include "needs.h"

#include <algorithm>

namespace rdmarepl::doctor {

// The verbs transport's default (transport/verbs/options.h): writes up to 64 bytes inline.
constexpr uint32_t kVerbsInlineBytes = 64;

ChannelNeeds needs_of(const replication::ChannelOptions& o, uint32_t followers) {
  ChannelNeeds n;
  n.role = o.role;
  n.shards = o.shards;
  n.followers = followers;
  n.queue_depth = o.queue_depth;
  n.max_inline_data = kVerbsInlineBytes;
  if (o.role == replication::Role::leader) {
    // One retained window per shard plus the zero-copy slab pool. The windows share one
    // registered arena (docs/replication.md, "Memory"); the pool's arenas are an eighth of it.
    n.registered_bytes = uint64_t{o.shards} * o.retain_bytes + o.zero_copy_pool_bytes;
    n.largest_region =
        std::max<uint64_t>(uint64_t{o.shards} * o.retain_bytes, o.zero_copy_pool_bytes / 8);
    n.queue_pairs = o.shards * std::max(1u, followers);
  } else {
    // Per shard two generations of the receive ring and of the large-record buffer; each
    // generation's buffers of every shard share one registered arena.
    n.registered_bytes = uint64_t{o.shards} * 2 * (o.ring_bytes + o.max_value_bytes);
    n.largest_region = uint64_t{o.shards} * (o.ring_bytes + o.max_value_bytes);
    n.queue_pairs = o.shards;
  }
  return n;
}

}  // namespace rdmarepl::doctor
