// Cutting a member's channel log back to a seq (docs/failover.md, "What the store
// implements"): the deposed leader's unacknowledged records go, the common prefix stays.
#pragma once

#include <cstdint>
#include <string>

#include "rdmarepl/core/result.h"

namespace rdmarepl::failover::detail {

// With the channel closed: removes from the log in `wal_dir` every batch of shard 0 above
// `keep_seq` (and what was logged after the first of them), so that reopening it recovers
// the records up to `keep_seq` only. False, with nothing changed, when a logged batch holds
// both `keep_seq` and the seq after it, or a checkpoint above it is all that holds the
// earlier records: the caller then empties the log instead.
Result<bool> rewind_log(const std::string& wal_dir, uint64_t keep_seq);

}  // namespace rdmarepl::failover::detail
