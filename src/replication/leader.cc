// Leader data path: encoding into the retained window, sealing, sending under credits,
// and the control thread; acknowledgements and progress are in leader_progress.cc, connection
// set-up in leader_sessions.cc.
#include "leader.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "batch_limits.h"
#include "imm.h"
#include "rdmarepl/core/clock.h"
#include "shard.h"

namespace rdmarepl::replication::detail {

using transport::Access;

Result<std::unique_ptr<ChannelCore>> Leader::create(const ChannelOptions& options,
                                                    std::unique_ptr<transport::Transport> t,
                                                    const StoreHooks& store) {
  std::unique_ptr<Leader> self(new Leader(options, std::move(t), store));
  RDMAREPL_TRY(self->open_memory(leader_memory_plan(options)));
  self->init_live_knobs();
  // Window entries are at least one header plus one empty record (64 bytes padded); a
  // descriptor table of that many entries would be large, so it is capped and the window
  // evicts by count as well as by bytes.
  const size_t max_batches = std::clamp<size_t>(options.retain_bytes / 64, 64, 65536);
  RDMAREPL_TRY(self->sessions_.init());
  self->metrics_.carriers.store(1);
  for (uint32_t i = 0; i < options.shards; ++i) {
    auto s = std::make_unique<Shard>();
    s->index = i;
    auto w = self->memory_.take(options.retain_bytes, Access::local_write,
                                fmt::format("retained window of shard {}", i));
    if (!w.ok()) return std::move(w).error();
    s->window = RetainedWindow(std::move(w).value(), max_batches);
    auto a = self->memory_.take(64, Access::local_write | Access::remote_write,
                                fmt::format("ack target of shard {}", i));
    if (!a.ok()) return std::move(a).error();
    s->ack_target = std::move(a).value();
    for (uint32_t f = 0; f < options.peers.size(); ++f) {
      auto l = std::make_unique<Link>();
      l->follower = f;
      l->shard = i;
      l->carriers = &self->sessions_.follower(f);
      l->inflight.resize(options.queue_depth);
      l->ring_space = RingSpace(options.ring_bytes);
      s->links.push_back(std::move(l));
    }
    self->shards_.push_back(std::move(s));
  }
  self->commits_.init(options.shards, options.max_pending_callbacks);
  self->metrics_.followers.store(static_cast<uint32_t>(options.peers.size()));
  RDMAREPL_TRY(self->writes_.open(self->memory_, *self->transport_, self->memory_counters_,
                                  self->region_counters_));
  RDMAREPL_TRY(self->log_.open());
  // One synchronous round so that a channel created while its followers are up starts
  // connected; followers that are not reachable yet are retried by the control thread.
  const uint64_t now = mono_ns();
  for (auto& s : self->shards_)
    for (auto& l : s->links) l->down_since_ns.store(now);
  for (uint32_t f = 0; f < self->sessions_.followers(); ++f)
    self->sessions_.start_session(self->sessions_.follower(f));
  Leader* raw = self.get();
  self->log_.start();
  self->start_threads([raw] { raw->control_loop(); });
  return std::unique_ptr<ChannelCore>(std::move(self));
}

void Leader::control_loop() noexcept {
  const auto tick = std::chrono::milliseconds(10);
  while (sleep_for(tick)) {
    writes_.maintain();  // idle registrations released, missed ones registered again
    for (uint32_t f = 0; f < sessions_.followers(); ++f) {
      if (stopping()) return;
      sessions_.tend(sessions_.follower(f));
    }
  }
}

uint64_t Leader::last_seq(uint32_t shard) const noexcept {
  return shards_[shard]->next_seq.load(std::memory_order_acquire) - 1;
}

void Leader::shard_metrics(MetricsSnapshot& m) const {
  const size_t n = shards_.size();
  const size_t followers = options_.peers.size();
  m.shard_lag.assign(n, 0);
  m.shard_records.assign(n, 0);
  m.shard_bytes.assign(n, 0);
  m.link_lag.assign(n * followers, 0);
  m.link_lag_bytes.assign(n * followers, 0);
  m.link_batches_sent.assign(n * followers, 0);
  m.link_credit_stalls.assign(n * followers, 0);
  m.link_reconnects.assign(n * followers, 0);
  m.link_catchup_bytes.assign(n * followers, 0);
  m.shard_batches.assign(n, 0);
  m.shard_window_stalls.assign(n, 0);
  m.shard_ack_latency_ns.assign(n, {});
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  for (size_t i = 0; i < n; ++i) {
    const Shard& s = *shards_[i];
    const uint64_t last = last_seq(static_cast<uint32_t>(i));
    m.shard_records[i] = ld(s.records);
    m.shard_bytes[i] = ld(s.bytes);
    m.shard_batches[i] = ld(s.batches);
    m.shard_window_stalls[i] = ld(s.window_stalls);
    m.shard_ack_latency_ns[i] = s.ack_latency_ns.snapshot();
    for (size_t f = 0; f < s.links.size(); ++f) {
      const Link& l = *s.links[f];
      m.shard_lag[i] = std::max(m.shard_lag[i], last - std::min(last, ld(l.acked_seq)));
      m.link_lag[i * followers + f] = ld(l.lag_records);
      m.link_lag_bytes[i * followers + f] = ld(l.lag_bytes);
      m.link_batches_sent[i * followers + f] = ld(l.batches_sent);
      m.link_credit_stalls[i * followers + f] = ld(l.credit_stalls);
      m.link_reconnects[i * followers + f] = ld(l.reconnects);
      m.link_catchup_bytes[i * followers + f] = ld(l.catchup_bytes);
    }
  }
}

// ------------------------------------------------------------------ window management

void Leader::push_desc(Shard& s, const BatchDesc& d) noexcept {
  s.window.push(d);
  if (options_.ack_mode == AckMode::none) s.latency_bn = s.window.end_bn();
  metrics_.batch_bytes.record(d.len);
  metrics_.batch_records.record(d.count);
  ChannelMetrics::add(metrics_.batches_sealed);
  ChannelMetrics::add(s.batches);
}

bool Leader::evictable(const Shard& s, const BatchDesc& d) const noexcept {
  if (!wal_sendable(d)) return false;  // not yet durable: nobody has it
  for (const auto& l : s.links)
    if (l->up.load(std::memory_order_relaxed) && !l->wal_catchup &&
        l->acked_seq.load(std::memory_order_relaxed) < d.last_seq())
      return false;  // a connected follower still needs it (one catching up from the log
                     // reads it back from there)
  return true;
}

// Makes `len` contiguous bytes placeable in the window (and a free descriptor slot), within
// the usable part of the window that the live pool knob allows.
RetainedWindow::Room Leader::make_room(Shard& s, uint64_t len) noexcept {
  return s.window.make_room(len, window_limit_.load(std::memory_order_relaxed),
                            [&](const BatchDesc& d) { return evictable(s, d); });
}

void Leader::seal_open(Shard& s) noexcept {
  if (!s.open_active) return;
  BatchDesc d;
  d.offset = s.open_offset;
  d.len = s.open.seal();
  d.consumed = s.open_consumed;
  d.first_seq = s.open.first_seq();
  d.count = s.open.count();
  d.t0_ns = s.open_t0;
  d.large = s.open_large;
  s.open_active = false;
  s.open_large = false;
  log_.seal(s, d);
  push_desc(s, d);
}

WriteResult Leader::write_gathered(std::string_view key, std::span<const std::byte> value,
                                   uint32_t lkey, HeldValue&& held) noexcept {
  WriteResult r;
  HeldValue h = std::move(held);  // released at once unless the window takes it
  const uint32_t shard = shard_of(key, options_.shards);
  Shard& s = *shards_[shard];
  const uint64_t ts = wall_ns();
  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) s.lock_as_writer(lock);
  // Alone in its batch (reserve() seals the open one): only the record's header and key
  // take room in the window.
  r.status = reserve(s, lock, kRecordHeaderSize + key.size(), true);
  if (r.status != WriteStatus::ok) return r;
  s.open.add_head(Op::put, key, static_cast<uint32_t>(value.size()), ts);
  s.count_value(value.size());
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
  log_.seal(s, d);
  push_desc(s, d);
  s.window.hold_newest(std::move(held));
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
  w.extra[1] = writes_.padding(pad);
  w.extra_count = pad > 0 ? 2 : 1;
  return w;
}

WriteStatus Leader::reserve(Shard& s, std::unique_lock<std::mutex>& lock, size_t rec,
                            bool large) noexcept {
  Deadline deadline = Deadline::never();
  bool stalled_once = false;
  RingSpace& space = s.window.space();
  for (;;) {
    if (large) seal_open(s);
    if (s.open_active) {
      const uint64_t cur = align_batch(s.open.size());
      const uint64_t next = align_batch(s.open.size() + rec);
      if (next == cur || space.can_extend(next - cur) ||
          s.window.extend_room(next - cur, [&](const BatchDesc& d) { return evictable(s, d); })) {
        space.extend(next - cur);
        s.open_consumed += next - cur;
        return WriteStatus::ok;
      }
      seal_open(s);  // the batch cannot grow in place: send it and start another
      send_pending(s);
      continue;
    }
    const uint64_t need = align_batch(kBatchHeaderSize + rec);
    if (make_room(s, need) != RetainedWindow::Room::stalled) {
      const auto p = space.place(need);
      s.open.start(s.window.data() + p.offset, s.window.size() - p.offset,
                   static_cast<uint16_t>(s.index), s.next_seq.load(std::memory_order_relaxed));
      s.open_active = true;
      s.open_large = large;
      s.open_offset = p.offset;
      s.open_consumed = p.consumed;
      s.open_t0 = mono_ns();
      return WriteStatus::ok;
    }
    // The window is full of batches a connected follower has not acknowledged: drive
    // progress for this shard until it acknowledges, up to stall_timeout.
    if (!stalled_once) {
      stalled_once = true;
      deadline = Deadline::after(options_.stall_timeout);
      ChannelMetrics::add(metrics_.window_stalls);
      ChannelMetrics::add(s.window_stalls);
    }
    if (progress_locked(s) == 0) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
    if (deadline.expired()) return WriteStatus::stalled;
    if (closed_.load(std::memory_order_acquire)) return WriteStatus::closed;
  }
}

WriteResult Leader::write(Op op, std::string_view key, std::string_view value) noexcept {
  WriteResult r;
  if (closed_.load(std::memory_order_acquire)) {
    r.status = WriteStatus::closed;
    return r;
  }
  if (key.size() > kMaxKeyBytes || value.size() > options_.max_value_bytes) {
    r.status = WriteStatus::too_large;
    return r;
  }
  if (op == Op::put && value.size() >= kRegionGatherMinBytes &&
      writes_.write_from_region(key, value, r))
    return r;
  const uint32_t shard = shard_of(key, options_.shards);
  Shard& s = *shards_[shard];
  const size_t rec = record_size(key.size(), value.size());
  const bool large = large_record(options_, key.size(), value.size());
  const uint64_t ts = wall_ns();

  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) s.lock_as_writer(lock);
  r.status = reserve(s, lock, rec, large);
  if (r.status != WriteStatus::ok) return r;
  s.open.add(op, key, value, ts);
  s.count_value(value.size());
  const uint64_t seq = s.open.next_seq() - 1;
  s.next_seq.store(seq + 1, std::memory_order_release);
  ChannelMetrics::add(metrics_.records_replicated);
  ChannelMetrics::add(metrics_.bytes_replicated, rec);
  s.count_replicated(1, rec);
  if (options_.ack_mode == AckMode::none && !(wal_ && wal_->gates()))
    s.committed.store(seq, std::memory_order_release);
  if (large || s.open.size() >= live_batch_bytes_.load(std::memory_order_relaxed) ||
      s.open.count() >= kMaxBatchRecords) {
    seal_open(s);
    send_pending(s);
  }
  r.ticket = Ticket{shard, seq};
  return r;
}

void Leader::flush() noexcept {
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    seal_open(*sp);
    send_pending(*sp);
  }
}

// ------------------------------------------------------------------ sending

void Leader::send_pending(Shard& s) noexcept {
  for (auto& lp : s.links) {
    Link& l = *lp;
    if (!l.up.load(std::memory_order_relaxed) || l.wal_catchup) continue;
    // Batches before the window's start were evicted because this follower acknowledged
    // them (its ack ran ahead of what this connection sent, after a stale resume point).
    if (l.next_send_bn < s.window.first_bn()) l.next_send_bn = s.window.first_bn();
    while (l.next_send_bn < s.window.end_bn()) {
      BatchDesc& d = s.window.desc(l.next_send_bn);
      if (!wal_sendable(d)) break;  // write-ahead: sent only once the log has it
      const auto r =
          l.post_batch(batch_bytes(s, d), d.large, d.last_seq(), l.next_send_bn, &d.digest);
      if (r == Link::Post::no_room) {
        if (!l.stalled) {
          ChannelMetrics::add(metrics_.credit_stalls);
          ChannelMetrics::add(l.credit_stalls);
        }
        l.stalled = true;
        break;
      }
      l.stalled = false;
      if (r == Link::Post::queue_full) break;
      if (r != Link::Post::posted) {
        link_down(s, l,
                  r == Link::Post::disconnected ? l.failure()
                                                : std::string("a write request was refused"));
        break;
      }
      ++l.next_send_bn;
      ChannelMetrics::add(metrics_.batches_sent);
      ChannelMetrics::add(l.batches_sent);
    }
  }
}

void Leader::close() noexcept {
  if (closed_.exchange(true)) return;
  stop_threads();
  log_.stop_catch_up();
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    for (auto& l : sp->links) l->up.store(false);
  }
  sessions_.close();
  log_.close();
  commits_.fail_callbacks_on_close();
}

}  // namespace rdmarepl::replication::detail
