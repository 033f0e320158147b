#include "channel_memory.h"

#include <fmt/format.h>

#include <cstring>

#include "batch_limits.h"
#include "hello.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

using transport::Access;

namespace {

size_t round_up(size_t n, size_t to) noexcept {
  return (n + to - 1) / to * to;
}

}  // namespace

void MemoryPlan::add(Access access, size_t bytes, size_t count, uint32_t gen) noexcept {
  Side& s = sides_[pool_of(access, gen)];
  const unsigned cls = memory::class_of(bytes);
  if (cls == memory::kNoClass) {
    s.run_bytes += count * memory::large_chunks(bytes) * memory::kMaxClassSize;
    s.runs += count;
  } else {
    s.chunks[cls] += count;
  }
}

size_t MemoryPlan::pool_bytes(size_t pool) const noexcept {
  const Side& s = sides_[pool];
  size_t bytes = s.run_bytes + s.runs * memory::kPageSize;
  for (unsigned c = 0; c < memory::kNumClasses; ++c) {
    if (s.chunks[c] == 0) continue;
    const size_t size = memory::class_size(c);
    // The buffers, what two thread caches may hold besides (a refill carves up to half a
    // cache at once), and the alignment of each carved batch.
    bytes += (s.chunks[c] + 2 * memory::thread_cache_capacity(c)) * size;
    bytes += 2 * memory::kPageSize;
  }
  return bytes == 0 ? 0 : round_up(bytes, memory::kMaxClassSize);
}

MemoryPlan leader_memory_plan(const ChannelOptions& o) {
  MemoryPlan p;
  const Access remote = Access::local_write | Access::remote_write;
  p.add(Access::local_write, o.retain_bytes, o.shards);  // retained windows (leader.cc)
  p.add(remote, 64, o.shards);                           // ack targets (leader.cc)
  if (!o.wal_dir.empty())                                // catch-up staging buffers (leader_wal.cc)
    p.add(Access::local_write, max_batch_bytes(o), o.shards);
  p.add(Access::local_write, 64);  // zero padding of zero-copy batches (leader_zero_copy.cc)
  if (!o.pre_shared_key.empty()) {
    // Write tags and acknowledgement-tag slots, per follower (leader_sessions.cc).
    const size_t tags = size_t{o.queue_depth + 8} * kMacTagBytes * o.shards;
    p.add(Access::local_write, tags, o.peers.size());
    p.add(remote, tags, o.peers.size());
  }
  return p;
}

MemoryPlan follower_memory_plan(const ChannelOptions& o) {
  MemoryPlan p;
  const Access remote = Access::local_write | Access::remote_write;
  // Two generations of each receive ring and large-record buffer per shard, a pool per
  // generation (follower.cc).
  for (uint32_t g = 0; g < kBufferGenerations; ++g) {
    p.add(remote, o.ring_bytes, o.shards, g);
    p.add(remote, large_buffer_room(o), o.shards, g);
  }
  // Acknowledgement tags, one buffer per carrier (FollowerCarrier::wrap()): up to one carrier per
  // shard for the session in force and as many for a new one arriving before it ends.
  if (!o.pre_shared_key.empty())
    p.add(Access::local_write, size_t{o.queue_depth + 9} * kMacTagBytes, 2 * size_t{o.shards});
  return p;
}

Result<ChannelMemory> ChannelMemory::create(transport::Transport& transport, const MemoryPlan& plan,
                                            memory::Counters* counters) {
  ChannelMemory m;
  for (size_t side = 0; side < m.pools_.size(); ++side) {
    const size_t bytes = plan.pool_bytes(side);
    if (bytes == 0) continue;
    memory::PoolOptions po;
    po.pool_bytes = bytes;
    po.arena_bytes = bytes;  // one arena: every run fits, one registration
    po.arena.access = side != 0 ? Access::local_write | Access::remote_write : Access::local_write;
    // 2 MiB pages mean fewer TLB and NIC translation entries (the arena falls back to 4 KiB
    // pages when the system has none reserved).
    po.arena.huge_pages = bytes >= memory::kHugePageSize;
    auto pool = memory::SlabPool::create(po, memory::transport_registrar(transport), counters);
    if (!pool.ok())
      return Error(
          pool.error().code(),
          fmt::format("registering the channel's {} memory ({} bytes): {}; lower "
                      "shards, retain_bytes, ring_bytes or max_value_bytes",
                      side != 0 ? "remotely writable" : "local", bytes, pool.error().message()));
    m.pools_[side] = std::move(pool).value();
  }
  return m;
}

Result<RegisteredBuffer> ChannelMemory::take(size_t bytes, Access access, std::string_view what,
                                             uint32_t gen) {
  memory::SlabPool* pool = pools_[pool_of(access, gen)].get();
  RegisteredBuffer b;
  if (pool != nullptr) {
    if (memory::class_of(bytes) == memory::kNoClass) {
      b = RegisteredBuffer(pool->alloc_large(bytes));
    } else {
      b = RegisteredBuffer(pool->alloc(bytes));
    }
  }
  if (b.data() == nullptr)
    return Error(Errc::out_of_memory,
                 fmt::format("the channel's registered memory has no room for the {} ({} "
                             "bytes): it was sized for other options at create()",
                             what, bytes));
  // A chunk may come back from an earlier buffer; a run (a window, ring, large-record or
  // staging buffer) is always written before it is read, and left untouched so that its
  // pages are faulted in as they are first used, as with the arenas before.
  if (memory::class_of(bytes) != memory::kNoClass) std::memset(b.data(), 0, bytes);
  return b;
}

size_t ChannelMemory::arena_count() const {
  size_t n = 0;
  for (const auto& p : pools_) n += p ? p->arena_count() : 0;
  return n;
}

}  // namespace rdmarepl::replication::detail
