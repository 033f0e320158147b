// The size limits of batches, each derived from ChannelOptions by one rule: validate(), the
// live knobs (apply_knobs()), the leader's and follower's buffers and the leader's catch-up
// staging buffer all use these functions and nothing else. See docs/replication.md,
// "Batches and their limits".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/record.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

// A batch of one record larger than this travels alone through the follower's large-record
// buffer; every other batch goes to its ring. A quarter of the ring, so that a ring always
// holds several batches.
constexpr uint64_t large_threshold(const ChannelOptions& o) noexcept {
  return o.ring_bytes / 4;
}

// Whether a record with this key and value goes through the large-record buffer.
constexpr bool large_record(const ChannelOptions& o, size_t key_len, size_t value_len) noexcept {
  return single_record_batch_size(key_len, value_len) > large_threshold(o);
}

// The large-record buffer: one batch holding a record of the largest key and value.
constexpr uint64_t large_buffer_bytes(const ChannelOptions& o) noexcept {
  return single_record_batch_size(kMaxKeyBytes, o.max_value_bytes);
}

// What a follower's large-record buffer holds: that batch and, with a pre-shared key, the
// tag that authenticates it (write_mac.h).
constexpr uint64_t large_buffer_room(const ChannelOptions& o) noexcept {
  return large_buffer_bytes(o) + (o.pre_shared_key.empty() ? 0 : kMacTagBytes);
}

// The smallest batch size (the size at which a batch is sealed) batch_bytes and apply_knobs()
// may set.
inline constexpr uint64_t kMinBatchBytes = 256;

// The largest batch size (the size at which a batch is sealed) that ChannelOptions::batch_bytes
// and apply_knobs() may set: a quarter of the ring. The retained window may limit a live
// batch size further (window_batch_limit()).
constexpr uint64_t max_live_batch_bytes(const ChannelOptions& o) noexcept {
  return o.ring_bytes / 4;
}

// The largest batch of several records the leader seals under any live batch size: it is
// sealed by the first record that brings it to the batch size, so it stays under
// max_live_batch_bytes() plus one record that is not large (at most large_threshold()).
constexpr uint64_t max_ring_batch_bytes(const ChannelOptions& o) noexcept {
  return max_live_batch_bytes(o) + large_threshold(o);
}

// Whether a batch of `count` records and `padded_len` bytes (sealed by the leader or read
// back from its log) goes to the large-record buffer: a large record's batch, or a logged
// batch larger than any ring batch these options seal (the log was written under a larger
// ring_bytes; such a batch may not fit the follower's ring at all, and the large-record
// buffer holds it whenever max_batch_bytes() does).
constexpr bool large_batch(const ChannelOptions& o, uint32_t count, uint64_t padded_len) noexcept {
  return (count == 1 && padded_len > large_threshold(o)) || padded_len > max_ring_batch_bytes(o);
}

// What the retained window of a shard must hold at least with a batch size of `batch_bytes`:
// two of the largest records and two batches.
constexpr uint64_t min_window_bytes(const ChannelOptions& o, uint64_t batch_bytes) noexcept {
  return 2 * large_buffer_bytes(o) + 2 * batch_bytes;
}

// The largest batch size the retained window of `retain_bytes` allows (min_window_bytes()),
// never below kMinBatchBytes.
constexpr uint64_t window_batch_limit(const ChannelOptions& o) noexcept {
  const uint64_t two_large = 2 * large_buffer_bytes(o);
  return std::max<uint64_t>(kMinBatchBytes,
                            o.retain_bytes > two_large ? (o.retain_bytes - two_large) / 2 : 0);
}

// The largest batch the leader can seal under any live batch size: a ring batch
// (max_ring_batch_bytes()) or a large record's batch, which travels alone. Every batch these
// options log fits it: it sizes the catch-up staging buffer and bounds a WAL frame; a logged
// batch larger than it cannot be sent.
constexpr uint64_t max_batch_bytes(const ChannelOptions& o) noexcept {
  return std::max(large_buffer_bytes(o), max_ring_batch_bytes(o));
}

}  // namespace rdmarepl::replication::detail
