// Leader: zero-copy values. The store fills a registered pool Buffer (allocate()) and hands
// it to write_buffer(); the record travels as a batch of its own whose batch header, record
// header and key are encoded into the retained window while its value is gathered from the
// Buffer (and its padding from a small zero area), on the wire and into the log. The window
// keeps the Buffer until the batch is evicted. See docs/replication.md, "Zero-copy values".
#include <fmt/format.h>

#include "batch_limits.h"
#include "leader.h"
#include "rdmarepl/core/clock.h"
#include "shard.h"

namespace rdmarepl::replication::detail {

Status Leader::open_pool() {
  auto z = memory_.take(64, transport::Access::local_write, "zero padding of zero-copy batches");
  if (!z.ok()) return std::move(z).error();
  zeros_ = std::move(z).value();
  regions_ = std::make_unique<StoreRegions>(memory::transport_registrar(*transport_),
                                            options_.region_idle_timeout, &region_counters_);
  if (options_.zero_copy_pool_bytes == 0) return ok_status();
  memory::PoolOptions po;
  po.pool_bytes = options_.zero_copy_pool_bytes;
  // Several arenas, so that one whose chunks are all back can be re-carved for another size
  // class (a chunk keeps its class while its arena has any chunk out).
  po.arena_bytes = std::max(memory::kMaxClassSize, options_.zero_copy_pool_bytes / 8);
  auto p =
      memory::SlabPool::create(po, memory::transport_registrar(*transport_), &memory_counters_);
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

memory::Buffer Leader::allocate(size_t size) noexcept {
  if (!pool_ || closed_.load(std::memory_order_acquire)) return {};
  return pool_->alloc(size);
}

memory::MemoryStats Leader::memory_stats() const {
  return pool_ ? pool_->stats() : memory::MemoryStats{};
}

size_t Leader::zero_copy_retained() const {
  size_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    n += sp->window.held_buffers();
  }
  return n;
}

WriteResult Leader::write_buffer(std::string_view key, memory::Buffer&& value) noexcept {
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
  return write_gathered(key, bytes, lkey, std::move(held));
}

WriteResult Leader::write_gathered(std::string_view key, std::span<const std::byte> value,
                                   uint32_t lkey, HeldValue&& held) noexcept {
  WriteResult r;
  HeldValue h = std::move(held);  // released at once unless the window takes it
  const uint32_t shard = shard_of(key, options_.shards);
  Shard& s = *shards_[shard];
  const uint64_t ts = wall_ns();
  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) lock_as_writer(s, lock);
  // Alone in its batch (reserve() seals the open one): only the record's header and key
  // take room in the window.
  r.status = reserve(s, lock, kRecordHeaderSize + key.size(), true);
  if (r.status != WriteStatus::ok) return r;
  s.open.add_head(Op::put, key, static_cast<uint32_t>(value.size()), ts);
  count_value(s, value.size());
  const uint64_t seq = s.open.next_seq() - 1;
  s.next_seq.store(seq + 1, std::memory_order_release);
  const uint64_t rec = record_size(key.size(), value.size());
  ChannelMetrics::add(metrics_.records_replicated);
  ChannelMetrics::add(metrics_.bytes_replicated, rec);
  s.count_replicated(1, rec);
  if (options_.ack_mode == AckMode::none && !(wal_ && wal_->gates()))
    s.committed.store(seq, std::memory_order_release);
  seal_gathered(s, value, lkey, std::move(h));
  send_pending(s);
  r.ticket = Ticket{shard, seq};
  return r;
}

void Leader::seal_gathered(Shard& s, std::span<const std::byte> value, uint32_t lkey,
                           HeldValue&& held) noexcept {
  BatchDesc d;
  d.offset = s.open_offset;
  d.len = s.open.seal_gathered(value);  // reads the value once, for the checksum
  d.consumed = s.open_consumed;
  d.first_seq = s.open.first_seq();
  d.count = s.open.count();
  d.t0_ns = s.open_t0;
  d.large = large_batch(options_, d.count, d.len);
  d.head = static_cast<uint32_t>(s.open.encoded());
  d.value = value.data();
  d.value_len = static_cast<uint32_t>(value.size());
  d.value_lkey = lkey;
  s.open_active = false;
  s.open_large = false;
  wal_seal(s, d);
  push_desc(s, d);
  s.window.hold_newest(std::move(held));
}

void Leader::release_acked_values(Shard& s) noexcept {
  if (s.window.held_buffers() == 0) return;
  auto all_acked = [&](const BatchDesc& d) {
    if (!wal_sendable(d)) return false;
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

transport::WriteRequest Leader::batch_bytes(const Shard& s, const BatchDesc& d) const noexcept {
  transport::WriteRequest w;
  w.local_addr = s.window.data() + d.offset;
  w.lkey = s.window.lkey();
  if (d.head == 0) {
    w.length = static_cast<uint32_t>(d.len);
    return w;
  }
  w.length = d.head;
  w.extra[0] = transport::LocalSegment{d.value, d.value_len, d.value_lkey};
  const auto pad = static_cast<uint32_t>(d.len - d.head - d.value_len);
  w.extra[1] = transport::LocalSegment{zeros_.data(), pad, zeros_.lkey()};
  w.extra_count = pad > 0 ? 2 : 1;
  return w;
}

}  // namespace rdmarepl::replication::detail
