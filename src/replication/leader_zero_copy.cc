// Gathered writes (leader_gathered.h): the zero-copy pool. The store fills a registered pool
// Buffer (allocate()) and hands it to write_buffer(); the record travels as a batch of its
// own whose batch header, record header and key are encoded into the retained window while
// its value is gathered from the Buffer (and its padding from a small zero area), on the
// wire and into the log (Leader::write_gathered()). The window keeps the Buffer until the
// batch is evicted. See docs/replication.md, "Zero-copy values".
#include <fmt/format.h>

#include <algorithm>

#include "batch_limits.h"
#include "leader_gathered.h"

namespace rdmarepl::replication::detail {

Status GatheredWrites::open(ChannelMemory& memory, transport::Transport& transport,
                            memory::Counters& pool_counters, memory::Counters& region_counters) {
  auto z = memory.take(64, transport::Access::local_write, "zero padding of zero-copy batches");
  if (!z.ok()) return std::move(z).error();
  zeros_ = std::move(z).value();
  regions_ = std::make_unique<StoreRegions>(memory::transport_registrar(transport),
                                            options_.region_idle_timeout, &region_counters);
  if (options_.zero_copy_pool_bytes == 0) return ok_status();
  memory::PoolOptions po;
  po.pool_bytes = options_.zero_copy_pool_bytes;
  // Several arenas, so that one whose chunks are all back can be re-carved for another size
  // class (a chunk keeps its class while its arena has any chunk out).
  po.arena_bytes = std::max(memory::kMaxClassSize, options_.zero_copy_pool_bytes / 8);
  auto p = memory::SlabPool::create(po, memory::transport_registrar(transport), &pool_counters);
  if (!p) {
    return Error(p.error().code(),
                 fmt::format("registering the zero-copy pool (ChannelOptions::"
                             "zero_copy_pool_bytes = {}): {}; lower it, or set it to 0 to "
                             "replicate by copy only",
                             options_.zero_copy_pool_bytes, p.error().message()));
  }
  pool_ = std::move(*p);
  return ok_status();
}

memory::Buffer GatheredWrites::allocate(size_t size) noexcept {
  if (!pool_ || closed_.load(std::memory_order_acquire)) return {};
  return pool_->alloc(size);
}

memory::MemoryStats GatheredWrites::memory_stats() const {
  return pool_ ? pool_->stats() : memory::MemoryStats{};
}

size_t GatheredWrites::zero_copy_retained() const {
  size_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    n += sp->window.held_buffers();
  }
  return n;
}

WriteResult GatheredWrites::write_buffer(std::string_view key, memory::Buffer&& value) noexcept {
  WriteResult r;
  memory::Buffer v = std::move(value);  // consumed whatever happens
  if (closed_.load(std::memory_order_acquire)) {
    r.status = WriteStatus::closed;
    return r;
  }
  if (v.empty()) {
    r.status = WriteStatus::no_buffer;
    return r;
  }
  if (key.size() > kMaxKeyBytes || v.size() > options_.max_value_bytes) {
    r.status = WriteStatus::too_large;
    return r;
  }
  const auto bytes = v.bytes();
  const uint32_t lkey = v.lkey();
  HeldValue held;
  held.buffer = std::move(v);
  return host_.write_gathered(key, bytes, lkey, std::move(held));
}

void GatheredWrites::release_acked_values(Shard& s) noexcept {
  if (s.window.held_buffers() == 0) return;
  auto all_acked = [&](const BatchDesc& d) {
    if (!host_.wal_sendable(d)) return false;
    for (const auto& l : s.links)
      if (l->acked_seq.load(std::memory_order_relaxed) < d.last_seq()) return false;
    return true;
  };
  bool released = false;
  while (s.window.held_buffers() > 0 && s.window.evict_oldest(all_acked)) released = true;
  // The evicting thread (usually the poller) allocates nothing: hand the chunks it just got
  // back to the shared lists at once, where writers find them.
  if (released && pool_) pool_->flush_thread_cache();
}

}  // namespace rdmarepl::replication::detail
