// Callbacks registered with ReplicationChannel::on_commit(): per shard a fixed-capacity
// min-heap ordered by seq (writers sharing a shard may register their tickets out of order),
// allocated when the channel is created so that registering never allocates. Whichever thread
// runs progress() fires the due callbacks, outside every lock.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "rdmarepl/replication/detail/channel_core.h"

namespace rdmarepl::replication::detail {

class CommitCallbacks {
 public:
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

  void init(uint32_t shards, size_t capacity_per_shard);
  [[nodiscard]] size_t capacity() const noexcept { return capacity_; }

  // False when `t.shard` already holds capacity() callbacks.
  bool push(Ticket t, CommitFn fn, void* ctx) noexcept;
  // The lowest seq with a callback in `shard`, or kNone. Lock-free.
  [[nodiscard]] uint64_t next_seq(uint32_t shard) const noexcept {
    return shards_[shard]->next.load(std::memory_order_acquire);
  }
  [[nodiscard]] bool any_pending() const noexcept {
    return pending_.load(std::memory_order_acquire) != 0;
  }
  // Fires, with an ok status, every callback of `shard` whose seq <= committed.
  size_t fire_committed(uint32_t shard, uint64_t committed) noexcept;
  // Fires every callback of `shard` with the status `why(seq)` returns (the channel was
  // closed, or the write can no longer meet the ack mode).
  size_t fail_all(uint32_t shard, const std::function<Status(uint64_t seq)>& why) noexcept;

 private:
  struct Entry {
    uint64_t seq;
    CommitFn fn;
    void* ctx;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Entry> heap;  // capacity_ reserved; std::push_heap with a greater-than order
    std::atomic<uint64_t> next{kNone};
  };
  // Pops up to `out.size()` entries of `s` for which `due(seq)` holds; returns how many.
  template <class Due>
  size_t pop_due(Shard& s, Due due, Entry* out, size_t max) noexcept;

  std::vector<std::unique_ptr<Shard>> shards_;
  size_t capacity_ = 0;
  std::atomic<uint64_t> pending_{0};
};

}  // namespace rdmarepl::replication::detail
