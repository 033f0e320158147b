// What a channel with given options asks of the node: registered bytes, the largest single
// registration, queue pairs and queue depth. The doctor compares them with the limits.
#pragma once

#include <cstdint>

#include "rdmarepl/replication/options.h"

namespace rdmarepl::doctor {

struct ChannelNeeds {
  replication::Role role = replication::Role::leader;
  uint32_t shards = 0;
  uint32_t followers = 0;  // leader: how many followers it replicates to
  uint64_t registered_bytes = 0;
  uint64_t largest_region = 0;
  uint32_t queue_pairs = 0;
  uint32_t queue_depth = 0;
  uint32_t max_inline_data = 0;  // what the verbs transport asks of each QP
};

// `followers` counts the leader's peers (ChannelOptions::peers may be empty in a check).
ChannelNeeds needs_of(const replication::ChannelOptions& o, uint32_t followers);

}  // namespace rdmarepl::doctor
