// Leader control plane (leader_sessions.h): connecting (and reconnecting) the carriers of
// each follower (leader_carriers.h), validating the follower's handshake and choosing where
// catch-up resumes. The carriers' completions are drained by leader_replies.cc.
#include "leader_sessions.h"

#include <fmt/format.h>

#include <algorithm>

#include "batch_limits.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

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

Status LeaderSessions::init() {
  for (uint32_t f = 0; f < options_.peers.size(); ++f) {
    auto fc = std::make_unique<FollowerCarriers>();
    fc->follower = f;
    fc->metrics = &metrics_;
    fc->queue_depth = options_.queue_depth;
    // Session ids differ between leader incarnations, so that a follower never takes a
    // carrier of an old one into a new session.
    fc->session = static_cast<uint32_t>(wall_ns() ^ (uint64_t{f} << 24));
    for (uint32_t k = 0; k < options_.shards; ++k) fc->slots.push_back(std::make_unique<Carrier>());
    fc->qps = std::make_unique<transport::QpManager>(
        [this, raw = fc.get()](uint32_t k) { return connect_carrier(*raw, k); },
        carrier_qp_options(options_, metrics_));
    RDMAREPL_TRY(init_tags(*fc));
    carriers_.push_back(std::move(fc));
  }
  return ok_status();
}

void LeaderSessions::set_active(uint32_t n) noexcept {
  for (auto& fc : carriers_) fc->active.store(n, std::memory_order_release);
}

void LeaderSessions::close() noexcept {
  for (auto& fc : carriers_) close_carriers(*fc);
}

void LeaderSessions::tend(FollowerCarriers& fc) noexcept {
  if (fc.failed.load(std::memory_order_acquire)) end_session(fc);
  if (!fc.up.load(std::memory_order_acquire) && mono_ns() >= fc.next_attempt_ns) start_session(fc);
  if (fc.up.load(std::memory_order_acquire)) adjust_carriers(fc);
}

Result<std::unique_ptr<transport::Connection>> LeaderSessions::connect_carrier(
    FollowerCarriers& fc, uint32_t k) noexcept {
  transport::ConnectionOptions co;
  co.node_id = options_.node_id;
  co.pre_shared_key = options_.pre_shared_key;
  co.regions = {shards_.front()->ack_target.remote()};
  if (fc.keyed) co.regions.push_back(fc.slots[k]->reply_region);
  LeaderHello hello;
  hello.carrier = k;
  hello.session = fc.session;
  hello.shard_count = options_.shards;
  hello.queue_depth = options_.queue_depth;
  hello.ring_bytes = options_.ring_bytes;
  hello.large_bytes = large_buffer_bytes(options_);
  hello.epoch = options_.leader_epoch;
  co.app_data = encode(hello);
  co.send_queue_depth = options_.queue_depth + 8;
  co.recv_queue_depth = options_.queue_depth + 8;
  // The receives for the follower's acks are posted by the transport before the follower
  // learns the connection is up, as on the follower's side.
  co.initial_recvs = options_.queue_depth + 4;
  co.connect_timeout = options_.connect_timeout;
  auto conn = transport_.connect(options_.peers[fc.follower], co);
  if (conn.ok() && fc.keyed && !(*conn)->peer().session_keys.set)
    return Error(Errc::auth_failed,
                 fmt::format("the {} transport authenticated the connection to follower {} but "
                             "gave no session keys, so its batches could not be authenticated",
                             transport_.name(), options_.peers[fc.follower].to_string()));
  return conn;
}

Status LeaderSessions::init_tags(FollowerCarriers& fc) {
  fc.keyed = !options_.pre_shared_key.empty();
  if (!fc.keyed) return ok_status();
  // A carrier keeps at most queue_depth - 2 batches unacknowledged (a checkpoint chunk goes
  // alone), so of queue_depth + 8 writes in a row on it a later one was acknowledged, and
  // the first, before it in the connection's order, was received: its slot is free again.
  const uint32_t per_carrier = options_.queue_depth + 8;
  auto tags = memory_.take(size_t{per_carrier} * kMacTagBytes * fc.slots.size(),
                           transport::Access::local_write,
                           fmt::format("write tags for follower {}", fc.follower));
  if (!tags.ok()) return std::move(tags).error();
  fc.tags = std::move(tags).value();
  auto replies = memory_.take(size_t{per_carrier} * kMacTagBytes * fc.slots.size(),
                              transport::Access::local_write | transport::Access::remote_write,
                              fmt::format("acknowledgement tags of follower {}", fc.follower));
  if (!replies.ok()) return std::move(replies).error();
  fc.reply_tags = std::move(replies).value();
  const auto whole = fc.reply_tags.remote();
  for (size_t k = 0; k < fc.slots.size(); ++k) {
    Carrier& c = *fc.slots[k];
    const size_t at = k * per_carrier * kMacTagBytes;
    c.tags = fc.tags.data() + at;
    c.tags_lkey = fc.tags.lkey();
    c.tag_slots = per_carrier;
    c.reply_tags = fc.reply_tags.data() + at;
    c.reply_region =
        transport::RemoteRegion{whole.addr + at, per_carrier * kMacTagBytes, whole.rkey};
  }
  return ok_status();
}

void LeaderSessions::arm(FollowerCarriers& fc, Carrier& c) noexcept {
  const auto& keys = c.conn->peer().session_keys;
  c.mac = fc.keyed ? WriteMac(keys.send, keys.digest) : WriteMac();
  c.reply_mac = fc.keyed ? WriteMac(keys.recv, keys.digest) : WriteMac();
}

bool LeaderSessions::start_session(FollowerCarriers& fc) noexcept {
  const auto& peer = options_.peers[fc.follower];
  // Exponential backoff: the first retry after reconnect_interval, then doubling up to
  // reconnect_max_interval (validate() keeps it >= reconnect_interval). It starts again only
  // after a session made progress (the follower acknowledged records sent in it: see
  // link_down()), not when one merely comes up: a peer that fails right after the handshake
  // is retried ever more slowly, like one that refuses it, while a follower that drops often
  // but keeps receiving is reconnected at once.
  const auto ns = [](std::chrono::milliseconds d) {
    return static_cast<uint64_t>(d.count()) * 1'000'000;
  };
  if (fc.proven.exchange(false, std::memory_order_acq_rel)) fc.backoff_ns = 0;
  fc.backoff_ns = fc.backoff_ns == 0
                      ? ns(options_.reconnect_interval)
                      : std::min(ns(options_.reconnect_max_interval), fc.backoff_ns * 2);
  fc.next_attempt_ns = mono_ns() + fc.backoff_ns;
  auto report = [&](const std::string& msg) {
    if (msg != fc.last_error) log::warn("rdmarepl leader: follower {}: {}", peer.to_string(), msg);
    fc.last_error = msg;
  };
  ++fc.session;
  auto conn = fc.qps->acquire(0);  // the pool is empty: a new session needs new connections
  if (!conn.ok()) {
    report(fmt::format("cannot connect ({}); retrying in {} ms (backing off to every {} ms)",
                       conn.error().message(), fc.backoff_ns / 1'000'000,
                       options_.reconnect_max_interval.count()));
    return false;
  }
  const auto fh = parse_follower_hello((*conn)->peer().app_data, peer.to_string());
  Status st = check_hello(peer, (*conn)->peer(), fh);
  if (!st.ok()) {
    report(st.error().message());
    return false;
  }
  {
    Carrier& c0 = *fc.slots[0];
    std::lock_guard lock(c0.mu);
    c0.conn = std::move(conn).value();
    arm(fc, c0);
    c0.inflight = 0;
    c0.up.store(true, std::memory_order_release);
  }
  fc.failed.store(false, std::memory_order_release);
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    if (closed_.load()) return false;
    st = install(*sp, *sp->links[fc.follower], fh.value());
    if (!st.ok()) break;
  }
  if (!st.ok()) {
    report(st.error().message());
    fc.fail(st.error().message());
    end_session(fc);
    return false;
  }
  fc.up.store(true, std::memory_order_release);
  fc.last_error.clear();
  log::info("rdmarepl leader: connected to follower {} over {} (session {}, {} carrier(s))",
            peer.to_string(), transport_.name(), fc.session,
            fc.active.load(std::memory_order_relaxed));
  return true;
}

void LeaderSessions::end_session(FollowerCarriers& fc) noexcept {
  const std::string why = fc.reason();
  if (fc.up.load(std::memory_order_acquire))
    log::warn(
        "rdmarepl leader: follower {} ({}): connection dropped: {}; reconnecting and "
        "resending what it has not acknowledged",
        fc.follower, options_.peers[fc.follower].to_string(), why);
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    host_.link_down(*sp, *sp->links[fc.follower], why);
  }
  close_carriers(fc);
  fc.up.store(false, std::memory_order_release);
  fc.failed.store(false, std::memory_order_release);
}

void LeaderSessions::close_carriers(FollowerCarriers& fc) noexcept {
  for (auto& c : fc.slots) {
    std::lock_guard lock(c->mu);
    c->up.store(false, std::memory_order_release);
    if (c->conn) c->conn->close();
    c->conn.reset();
    c->inflight = 0;
    c->users.store(0, std::memory_order_relaxed);
  }
  fc.qps->clear();  // pooled carriers belong to the session too
}

void LeaderSessions::adjust_carriers(FollowerCarriers& fc) noexcept {
  const uint32_t n = fc.active.load(std::memory_order_acquire);
  if (fc.qps->set_active(n)) fit_carriers(fc, n);
  // Beyond N: back to the pool (still connected) once no shard posts on it any more.
  for (uint32_t k = n; k < fc.slots.size(); ++k) pool_idle(fc, k);
  // Pooled carriers are polled here, so that one that fails ends the session as an active
  // one would (nothing is in flight on them).
  // A pooled connection's replies are checked with its slot's MAC state, which it keeps.
  fc.qps->for_each_idle([&](uint32_t slot, transport::Connection& conn) {
    (void)replies_.drain(fc, *fc.slots[slot], conn);
  });
  for (uint32_t k = 0; k < n; ++k) {
    Carrier& c = *fc.slots[k];
    if (c.up.load(std::memory_order_acquire)) continue;
    bool reused = false;
    auto conn = fc.qps->acquire(k, &reused);  // from the pool when it holds one: no handshake
    if (!conn.ok()) {
      log::warn(
          "rdmarepl leader: follower {}: carrier {} cannot connect ({}); its shards stay "
          "on the other carriers",
          options_.peers[fc.follower].to_string(), k, conn.error().message());
      return;
    }
    std::lock_guard lock(c.mu);
    c.conn = std::move(conn).value();
    // A pooled connection goes on with the message counters it had in this slot, as its
    // peer does; only a new one starts them (and its reply slots) afresh.
    if (!reused) arm(fc, c);
    c.inflight = 0;
    c.up.store(true, std::memory_order_release);
  }
}

void LeaderSessions::pool_idle(FollowerCarriers& fc, uint32_t k) noexcept {
  Carrier& c = *fc.slots[k];
  if (!c.up.load(std::memory_order_acquire) || c.users.load(std::memory_order_acquire) != 0) return;
  std::unique_ptr<transport::Connection> conn;
  {
    std::lock_guard lock(c.mu);
    if (!c.conn || c.users.load(std::memory_order_relaxed) != 0 || c.inflight != 0) return;
    c.up.store(false, std::memory_order_release);
    conn = std::move(c.conn);
  }
  // Its authentication state stays in the slot, for when the slot takes it back.
  fc.qps->release(std::move(conn), k);
}

void LeaderSessions::fit_carriers(FollowerCarriers& fc, uint32_t n) noexcept {
  for (uint32_t k = 0; k < n && k < fc.slots.size(); ++k) {
    Carrier& c = *fc.slots[k];
    std::lock_guard lock(c.mu);  // no poll or post while its completion queues change
    if (!c.conn) continue;
    if (Status st = fc.qps->fit(*c.conn); !st.ok())
      log::warn("rdmarepl leader: follower {}: carrier {}: {}; it keeps its completion queue size",
                options_.peers[fc.follower].to_string(), k, st.error().message());
  }
}

Status LeaderSessions::check_hello(const transport::Endpoint& peer, const transport::PeerInfo& info,
                                   const Result<FollowerHello>& fh) const {
  Status st = fh.ok() ? ok_status() : Status(fh.error());
  if (st.ok() && fh->shard_count != options_.shards)
    st = Error(Errc::invalid_argument,
               fmt::format("follower {} has {} shards but this leader has {}; configure the same "
                           "ChannelOptions::shards on both",
                           peer.to_string(), fh->shard_count, options_.shards));
  if (st.ok() &&
      (fh->ring_bytes < options_.ring_bytes || fh->large_bytes < large_buffer_room(options_)))
    st = Error(Errc::invalid_argument,
               fmt::format("follower {} has ring_bytes {} / large-record buffer {} but this leader "
                           "needs at least {} / {}; use the same ring_bytes and max_value_bytes on "
                           "both",
                           peer.to_string(), fh->ring_bytes, fh->large_bytes, options_.ring_bytes,
                           large_buffer_room(options_)));
  if (st.ok() && fh->queue_depth < options_.queue_depth)
    st = Error(Errc::invalid_argument,
               fmt::format("follower {} posts {} receives but this leader keeps up to {} batches "
                           "in flight; use the same queue_depth on both",
                           peer.to_string(), fh->queue_depth, options_.queue_depth));
  if (st.ok() && info.regions.size() != 2 * size_t{kBufferGenerations} * options_.shards)
    st = Error(Errc::protocol_error,
               fmt::format("follower {} advertised {} regions, expected {} (two rings and two "
                           "large-record buffers per shard)",
                           peer.to_string(), info.regions.size(),
                           2 * kBufferGenerations * options_.shards));
  return st;
}

Status LeaderSessions::install(Shard& s, Link& l, const FollowerHello& hello) {
  const auto& peer = options_.peers[l.follower];
  const uint64_t resume = hello.applied[s.index];
  const uint64_t sealed_last = s.sealed_last();
  if (resume > sealed_last)
    return Error(Errc::protocol_error,
                 fmt::format("follower {} reports shard {} applied through seq {}, but this leader "
                             "has only sealed up to seq {}: the follower holds writes this leader "
                             "does not have (it was fed by another leader incarnation, or this "
                             "leader restarted and lost the unsynced tail of its write-ahead log: "
                             "durability={}). Nothing is sent to it, so the replicas do not "
                             "diverge silently; clear the follower's store and wal_dir and "
                             "restart it to resync it from this leader, and run the leader with "
                             "durability=batch to rule this out",
                             peer.to_string(), s.index, resume, sealed_last,
                             options_.wal_dir.empty() ? "no log" : to_string(options_.durability)));
  uint64_t bn = s.window.end_bn();
  bool from_wal = false;  // older than the window: streamed from the log first
  if (resume < sealed_last) {
    bn = s.window.first_after(resume);
    const bool held = s.window.holds_next(bn, resume);
    from_wal = !held && wal_;
    if (!held && !wal_) {
      const uint64_t oldest = s.window.first_seq(sealed_last + 1);
      return Error(
          Errc::not_found,
          fmt::format("follower {} needs shard {} from seq {} but this leader retains only "
                      "seqs {}..{} in memory (retain_bytes = {}): it cannot be caught up "
                      "from the retained window; restore it from a snapshot or raise "
                      "retain_bytes",
                      peer.to_string(), s.index, resume + 1, oldest, sealed_last,
                      options_.retain_bytes));
    }
  }
  // The buffer generation the follower named for this connection: not the one its previous
  // connection (if any) wrote to, which the follower may still be reading.
  const size_t gen = hello.generation[s.index];
  const size_t n = options_.shards;
  FollowerCarriers& fc = *carriers_[l.follower];
  const auto& regions = fc.slots[0]->conn->peer().regions;
  l.ring = regions[gen * n + s.index];
  l.large = regions[(kBufferGenerations + gen) * n + s.index];
  l.carrier = 0;
  fc.slots[0]->users.fetch_add(1, std::memory_order_relaxed);
  l.ack_in.store(0, std::memory_order_relaxed);
  l.reset_flow();
  l.next_send_bn = bn;
  l.wal_catchup = from_wal;
  l.shipping = false;
  ++l.generation;
  l.acked_seq.store(resume, std::memory_order_release);
  l.quiet_since_ns = mono_ns();
  l.made_progress = false;
  l.sent_seq = resume;
  l.up.store(true, std::memory_order_release);
  if (l.ever_connected) {
    ChannelMetrics::add(metrics_.reconnects);
    ChannelMetrics::add(l.reconnects);
  }
  if (bn < s.window.end_bn() && l.ever_connected)
    ChannelMetrics::add(metrics_.batches_resent, s.window.end_bn() - bn);
  l.ever_connected = true;
  host_.send_pending(s);
  return ok_status();
}

}  // namespace rdmarepl::replication::detail
