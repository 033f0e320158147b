// Leader data path: encoding into the retained window, sealing, sending under credits,
// acknowledgements and commit tracking. Connection set-up is in leader_connect.cc.
#include "leader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>

#include "batch_limits.h"
#include "imm.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "shard.h"

namespace rdmarepl::replication::detail {

using transport::Access;

namespace {

// The QP manager of one follower's carriers. Every carrier's queues are queue_depth + 8 deep
// (connect_carrier()), which is also the size its completion queues are created with: the
// budget gives each shard that much, so N carriers of S shards get S / N shards' worth each
// (a carrier carries about S / N shards), never below their creation size, and the
// follower's completion entries stay about the same whatever N is. Every carrier above N may
// wait in the pool.
transport::QpManagerOptions carrier_qp_options(const ChannelOptions& o, ChannelMetrics& m) {
  transport::QpManagerOptions q;
  q.max_idle = o.shards;
  q.cq_budget = o.shards * (o.queue_depth + 8);
  q.reused_counter = &m.qps_reused;
  q.resize_counter = &m.cq_resizes;
  return q;
}

}  // namespace

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
  for (uint32_t f = 0; f < options.peers.size(); ++f) {
    auto fc = std::make_unique<FollowerCarriers>();
    fc->follower = f;
    fc->metrics = &self->metrics_;
    fc->queue_depth = options.queue_depth;
    // Session ids differ between leader incarnations, so that a follower never takes a
    // carrier of an old one into a new session.
    fc->session = static_cast<uint32_t>(wall_ns() ^ (uint64_t{f} << 24));
    for (uint32_t k = 0; k < options.shards; ++k) fc->slots.push_back(std::make_unique<Carrier>());
    fc->qps = std::make_unique<transport::QpManager>(
        [leader = self.get(), raw = fc.get()](uint32_t k) {
          return leader->connect_carrier(*raw, k);
        },
        carrier_qp_options(options, self->metrics_));
    RDMAREPL_TRY(self->init_tags(*fc));
    self->carriers_.push_back(std::move(fc));
  }
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
      l->carriers = self->carriers_[f].get();
      l->inflight.resize(options.queue_depth);
      l->ring_space = RingSpace(options.ring_bytes);
      s->links.push_back(std::move(l));
    }
    self->shards_.push_back(std::move(s));
  }
  self->commits_.init(options.shards, options.max_pending_callbacks);
  self->metrics_.followers.store(static_cast<uint32_t>(options.peers.size()));
  RDMAREPL_TRY(self->open_pool());
  RDMAREPL_TRY(self->open_wal());
  // One synchronous round so that a channel created while its followers are up starts
  // connected; followers that are not reachable yet are retried by the control thread.
  const uint64_t now = mono_ns();
  for (auto& s : self->shards_)
    for (auto& l : s->links) l->down_since_ns.store(now);
  for (auto& fc : self->carriers_) self->start_session(*fc);
  Leader* raw = self.get();
  self->start_wal();
  self->start_threads([raw] { raw->control_loop(); });
  return std::unique_ptr<ChannelCore>(std::move(self));
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
  auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  for (size_t i = 0; i < n; ++i) {
    const Shard& s = *shards_[i];
    const uint64_t last = last_seq(static_cast<uint32_t>(i));
    m.shard_records[i] = ld(s.records);
    m.shard_bytes[i] = ld(s.bytes);
    for (size_t f = 0; f < s.links.size(); ++f) {
      const Link& l = *s.links[f];
      m.shard_lag[i] = std::max(m.shard_lag[i], last - std::min(last, ld(l.acked_seq)));
      m.link_lag[i * followers + f] = ld(l.lag_records);
      m.link_lag_bytes[i * followers + f] = ld(l.lag_bytes);
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
  wal_seal(s, d);
  push_desc(s, d);
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
  if (op == Op::put && value.size() >= kRegionGatherMinBytes && regions_->any() &&
      write_from_region(key, value, r))
    return r;
  const uint32_t shard = shard_of(key, options_.shards);
  Shard& s = *shards_[shard];
  const size_t rec = record_size(key.size(), value.size());
  const bool large = large_record(options_, key.size(), value.size());
  const uint64_t ts = wall_ns();

  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) lock_as_writer(s, lock);
  r.status = reserve(s, lock, rec, large);
  if (r.status != WriteStatus::ok) return r;
  s.open.add(op, key, value, ts);
  count_value(s, value.size());
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
      const BatchDesc& d = s.window.desc(l.next_send_bn);
      if (!wal_sendable(d)) break;  // write-ahead: sent only once the log has it
      const auto r = l.post_batch(batch_bytes(s, d), d.large, d.last_seq(), l.next_send_bn);
      if (r == Link::Post::no_room) {
        if (!l.stalled) ChannelMetrics::add(metrics_.credit_stalls);
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
    }
  }
}

// ------------------------------------------------------------------ acknowledgements

size_t Leader::poll_carrier(FollowerCarriers& fc, Carrier& c) noexcept {
  std::unique_lock lock(c.mu, std::try_to_lock);
  if (!lock.owns_lock() || !c.conn) return 0;
  return drain_carrier(fc, c, *c.conn);
}

size_t Leader::drain_carrier(FollowerCarriers& fc, Carrier& c,
                             transport::Connection& conn) noexcept {
  std::array<transport::Completion, 32> wc;
  const size_t n = conn.poll(wc);
  uint32_t reposts = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = wc[i];
    if (e.status != transport::WcStatus::success) {
      if (peer_violated_protocol(conn)) ChannelMetrics::add(metrics_.protocol_errors);
      fc.fail(transport::failure_reason(conn, e.status));
      return n;
    }
    if (e.opcode != transport::WcOpcode::recv_rdma_with_imm) continue;
    ++reposts;
    if (c.reply_mac.enabled() && !authentic(c, e)) {
      ChannelMetrics::add(metrics_.auth_failures);
      fc.fail(fmt::format(
          "authentication failed: the MAC of a reply (immediate 0x{:08x}, {} bytes) from "
          "follower {} ({}) does not match: it was forged, altered, replayed or reordered on "
          "the way; it was not counted",
          e.imm, e.byte_len, conn.peer().node_id, conn.peer().address));
      return n;
    }
    const uint32_t shard = imm_shard(e.imm);
    Link* l = shard < shards_.size() ? shards_[shard]->links[fc.follower].get() : nullptr;
    if (l != nullptr && imm_kind(e.imm) == ImmKind::checkpoint &&
        l->shipping.load(std::memory_order_acquire)) {
      l->ship_reply.store(imm_arg(e.imm), std::memory_order_relaxed);
      l->ship_replies.fetch_add(1, std::memory_order_release);  // the catch-up thread waits
      continue;
    }
    if (l == nullptr || imm_kind(e.imm) != ImmKind::ack) {
      ChannelMetrics::add(metrics_.protocol_errors);
      fc.fail(
          fmt::format("protocol error: unexpected immediate 0x{:08x} from the follower", e.imm));
      return n;
    }
    // The newest acknowledgement wins: they are cumulative. take_ack() checks it.
    l->ack_in.store(Link::kAckPresent | imm_arg(e.imm), std::memory_order_release);
  }
  if (reposts != 0 && conn.post_recvs(reposts) != transport::PostStatus::ok)
    fc.fail("re-posting receives failed");
  return n;
}

bool Leader::authentic(Carrier& c, const transport::Completion& e) noexcept {
  if (e.byte_len != kMacTagBytes) return false;  // no tag (or more than one)
  const uint64_t slot = c.reply_mac.counter() % (c.reply_region.length / kMacTagBytes);
  const auto* tag = reinterpret_cast<const uint8_t*>(c.reply_tags + slot * kMacTagBytes);
  return c.reply_mac.open(e.imm, {}, std::span<const uint8_t, kMacTagBytes>(tag, kMacTagBytes));
}

size_t Leader::poll_carriers(uint32_t worker, uint32_t workers) noexcept {
  size_t work = 0;
  size_t i = 0;
  for (auto& fc : carriers_)
    for (auto& c : fc->slots) {
      if (i++ % workers != worker || !c->up.load(std::memory_order_acquire)) continue;
      work += poll_carrier(*fc, *c);
    }
  return work;
}

void Leader::take_ack(Shard& s, Link& l) noexcept {
  const uint32_t in = l.ack_in.exchange(0, std::memory_order_acquire);
  if (in == 0) return;
  l.quiet_since_ns = mono_ns();
  const uint64_t acked = l.acked_seq.load(std::memory_order_relaxed);
  const uint64_t seq = widen_seq(in & kImmArgMask, acked);
  // A follower acknowledges at most the last seq of the newest batch it took in this session,
  // so everything freed below has been read (its resume point may still be older than what
  // it applied through an old session: it skips those records). More would claim records it
  // was never sent and let the commit point pass them.
  if (seq > l.sent_seq) {
    ChannelMetrics::add(metrics_.protocol_errors);
    link_down(s, l,
              fmt::format("protocol error: acknowledgement of seq {} outside [{}, {}] "
                          "(last acknowledged, last sent on this connection)",
                          seq, acked, l.sent_seq));
    return;
  }
  l.retire(seq);
  if (seq > acked) l.made_progress = true;
  if (l.inflight_count == 0)  // skip batches the follower already has
    while (l.next_send_bn < s.window.end_bn() && s.window.desc(l.next_send_bn).last_seq() <= seq)
      ++l.next_send_bn;
  l.acked_seq.store(seq, std::memory_order_release);
}

void Leader::link_down(Shard& s, Link& l, std::string_view why) noexcept {
  if (!l.up.load(std::memory_order_relaxed)) return;
  FollowerCarriers& fc = *carriers_[l.follower];
  // One link down ends the follower's session: its carriers are shared by every shard.
  fc.fail(why);
  log::debug(
      "rdmarepl leader: follower {} ({}) shard {}: down ({}); resending from seq {} in "
      "the next session",
      l.follower, options_.peers[l.follower].to_string(), s.index, why, l.acked_seq.load() + 1);
  if (l.made_progress) fc.proven.store(true, std::memory_order_release);
  l.leave_carrier();
  l.ack_in.store(0, std::memory_order_relaxed);
  l.up.store(false, std::memory_order_release);
  l.down_since_ns.store(mono_ns(), std::memory_order_release);
  l.reset_flow();
  l.wal_catchup = false;
  l.shipping = false;
}

size_t Leader::progress_locked(Shard& s) noexcept {
  size_t work = 0;
  const uint64_t silent_ns = static_cast<uint64_t>(options_.ack_timeout.count()) * 1'000'000;
  for (auto& l : s.links) {
    if (!l->up.load(std::memory_order_relaxed)) continue;
    FollowerCarriers& fc = *carriers_[l->follower];
    // The shard's own carrier, so that a writer waiting for the window (reserve()) or a
    // manual-polling store sees its acknowledgements; other pollers only try its lock.
    work += poll_carrier(fc, *fc.slots[l->carrier]);
    take_ack(s, *l);
    if (l->up.load(std::memory_order_relaxed) && fc.failed.load(std::memory_order_acquire)) {
      link_down(s, *l, fc.reason());
      continue;
    }
    if (l->up.load(std::memory_order_relaxed) && l->silent(silent_ns)) {
      ChannelMetrics::add(metrics_.ack_timeouts);
      link_down(s, *l,
                fmt::format("it acknowledged nothing for {} ms with {} batches in flight "
                            "(ChannelOptions::ack_timeout); treating it as away, so that the "
                            "retained window no longer waits for it. Look for a slow or "
                            "blocked Store::apply or sync in the follower's log, or raise "
                            "ack_timeout",
                            options_.ack_timeout.count(), l->inflight_count));
    }
  }
  if (s.open_active && mono_ns() - s.open_t0 >= live_flush_ns_.load(std::memory_order_relaxed)) {
    seal_open(s);
    ++work;
  }
  send_pending(s);
  commits_.update(s);
  release_acked_values(s);
  s.retained_bytes.store(s.window.space().used(), std::memory_order_relaxed);
  return work;
}

size_t Leader::progress() noexcept {
  size_t work = 0;
  std::array<uint64_t, kMaxFollowers> lag{};
  std::array<uint64_t, kMaxFollowers> lag_bytes{};
  uint64_t depth = 0;
  uint64_t retained = 0;
  work += poll_carriers(0, 1);
  for (auto& sp : shards_) {
    retained += sp->retained_bytes.load(std::memory_order_relaxed);
    std::unique_lock lock(sp->mu, std::try_to_lock);
    if (!lock.owns_lock()) {
      ++work;  // another thread is working on this shard
      continue;
    }
    work += progress_locked(*sp);
    const uint64_t last = sp->next_seq.load(std::memory_order_relaxed) - 1;
    uint64_t shard_depth = 0;
    for (size_t i = 0; i < sp->links.size(); ++i) {
      Link& l = *sp->links[i];
      const uint64_t acked = l.acked_seq.load(std::memory_order_relaxed);
      const uint64_t link_lag = last - std::min(last, acked);
      const uint64_t link_bytes = sp->window.bytes_after(acked);
      l.lag_records.store(link_lag, std::memory_order_relaxed);
      l.lag_bytes.store(link_bytes, std::memory_order_relaxed);
      lag[i] += link_lag;
      lag_bytes[i] += link_bytes;
      if (l.up.load(std::memory_order_relaxed))
        shard_depth = std::max<uint64_t>(shard_depth,
                                         sp->window.end_bn() - l.next_send_bn + l.inflight_count);
    }
    depth += shard_depth;
  }
  work += commits_.fire_callbacks();
  metrics_.queue_depth.store(depth, std::memory_order_relaxed);
  metrics_.retained_bytes.store(retained, std::memory_order_relaxed);
  for (size_t i = 0; i < options_.peers.size(); ++i) {
    metrics_.follower_lag[i].store(lag[i], std::memory_order_relaxed);
    metrics_.follower_lag_bytes[i].store(lag_bytes[i], std::memory_order_relaxed);
    bool up = carriers_[i]->up.load(std::memory_order_relaxed);
    for (auto& sp : shards_) up = up && sp->links[i]->up.load(std::memory_order_relaxed);
    metrics_.follower_connected[i].store(up, std::memory_order_relaxed);
  }
  return work;
}

// Blocks in the first connected link's wait(): acknowledgements on other links are seen at
// most `timeout` later, which is the price of not spinning.
void Leader::wait_for_work(std::chrono::microseconds timeout) noexcept {
  const auto ms = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout), std::chrono::milliseconds(1));
  for (auto& sp : shards_) {
    std::unique_lock lock(sp->mu, std::try_to_lock);
    if (!lock.owns_lock() || sp->writers_waiting.load(std::memory_order_relaxed) != 0) return;
    for (auto& l : sp->links)
      if (l->up.load(std::memory_order_relaxed) && !sp->open_active) {
        Carrier& c = *l->carriers->slots[l->carrier];
        std::unique_lock clock(c.mu, std::try_to_lock);
        if (!clock.owns_lock() || !c.conn) return;
        (void)c.conn->wait(ms);
        return;
      }
  }
  std::this_thread::sleep_for(timeout);
}

void Leader::close() noexcept {
  if (closed_.exchange(true)) return;
  stop_threads();
  if (catchup_) catchup_->stop();
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    for (auto& l : sp->links) l->up.store(false);
  }
  for (auto& fc : carriers_) close_carriers(*fc);
  if (wal_) wal_->close();
  commits_.fail_callbacks_on_close();
}

}  // namespace rdmarepl::replication::detail
