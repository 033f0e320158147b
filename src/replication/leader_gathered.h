// Where the leader's gathered values come from: zero-copy Buffers of the registered pool
// (allocate(), replicate(key, Buffer); leader_zero_copy.cc) and values that lie in the
// store's own registered regions (register_region(); leader_regions.cc). Such a value is not
// copied into the retained window: its record goes alone in a batch whose header, record
// header and key are in the window, and the value (and its padding, from a small zero area)
// is gathered from where it lies, on the wire and into the log. The window holds the pool
// Buffer or the region's Pin until the batch is evicted. The Leader owns one GatheredWrites
// and forwards its ChannelCore calls to it; it is reached back through GatheredHost only.
// See docs/replication.md, "Zero-copy values" and "Values in the store's own regions".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "channel_memory.h"
#include "leader_shard.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/ticket.h"
#include "rdmarepl/transport/transport.h"
#include "registered_buffer.h"
#include "store_regions.h"

namespace rdmarepl::replication::detail {

// What gathered writes need of the leader.
class GatheredHost {
 public:
  // A put of `key` alone in its batch, whose value (`lkey`) is gathered and kept in the
  // window by `held` (a pool Buffer or a store region's Pin) until eviction.
  virtual WriteResult write_gathered(std::string_view key, std::span<const std::byte> value,
                                     uint32_t lkey, HeldValue&& held) noexcept = 0;
  // Whether batch `d` may be sent and evicted: the log has it (always, without a log).
  [[nodiscard]] virtual bool wal_sendable(const BatchDesc& d) const noexcept = 0;
  // One round of progress (unregister_region() waits for evictions with it).
  virtual size_t progress() noexcept = 0;

 protected:
  ~GatheredHost() = default;
};

class GatheredWrites {
 public:
  // Everything passed must outlive this object; `shards` may be filled after construction.
  GatheredWrites(const ChannelOptions& options, ChannelMetrics& metrics,
                 const std::vector<std::unique_ptr<Shard>>& shards, const std::atomic<bool>& closed,
                 GatheredHost& host)
      : options_(options), metrics_(metrics), shards_(shards), closed_(closed), host_(host) {}
  GatheredWrites(const GatheredWrites&) = delete;
  GatheredWrites& operator=(const GatheredWrites&) = delete;

  // At create(): the zero padding (from `memory`), the store regions' registrations and,
  // with zero_copy_pool_bytes, the pool, registered once through `transport` (counted in
  // `pool_counters` and `region_counters`).
  Status open(ChannelMemory& memory, transport::Transport& transport,
              memory::Counters& pool_counters, memory::Counters& region_counters);

  // Zero-copy Buffers (leader_zero_copy.cc).
  [[nodiscard]] memory::Buffer allocate(size_t size) noexcept;
  WriteResult write_buffer(std::string_view key, memory::Buffer&& value) noexcept;
  [[nodiscard]] memory::MemoryStats memory_stats() const;
  [[nodiscard]] size_t zero_copy_retained() const;
  // Evicts the oldest batches every follower (connected or not) acknowledged, while the
  // window holds zero-copy buffers, so that their values go back to the pool promptly.
  // Shard lock held.
  void release_acked_values(Shard& s) noexcept;
  // The segment of `length` zero bytes gathered after a value to pad its record.
  [[nodiscard]] transport::LocalSegment padding(uint32_t length) const noexcept {
    return transport::LocalSegment{zeros_.data(), length, zeros_.lkey()};
  }

  // The store's own regions (leader_regions.cc).
  Status register_region(const void* addr, size_t length);
  Status unregister_region(const void* addr, std::chrono::milliseconds timeout);
  [[nodiscard]] size_t region_references(const void* addr) const;
  // A put whose value lies in a registered store region: gathered (true, `r` set) or not
  // (false: the caller copies it).
  bool write_from_region(std::string_view key, std::string_view value, WriteResult& r) noexcept;
  // Control thread: idle registrations released, missed ones registered again.
  void maintain() noexcept { regions_->maintain(); }

 private:
  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  const std::vector<std::unique_ptr<Shard>>& shards_;
  const std::atomic<bool>& closed_;
  GatheredHost& host_;
  // The Leader declares this object before its shards: the windows' zero-copy Buffers and
  // region Pins go back to these before they go.
  std::unique_ptr<StoreRegions> regions_;
  std::unique_ptr<memory::SlabPool> pool_;
  RegisteredBuffer zeros_;  // the padding gathered after a zero-copy value
};

}  // namespace rdmarepl::replication::detail
