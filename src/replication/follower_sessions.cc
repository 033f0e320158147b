// Follower control plane (follower_sessions.h): the handshake threads that accept leader
// connections, and installing them as carriers of a session, subject to the leader's
// identity and epoch (docs/replication.md, "Handshakes" and "Leader identity and epoch");
// and the doctor's probes, answered on the handshake thread and never installed (probe.h).
#include "follower_sessions.h"

#include <fmt/format.h>

#include <limits>

#include <thread>
#include <vector>

#include "core/thread_name.h"
#include "probe.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

Result<transport::Endpoint> FollowerSessions::listen(transport::Transport& transport) {
  if (log_.stored_leader().epoch != 0 || !log_.stored_leader().node_id.empty()) {
    highest_epoch_ = log_.stored_leader().epoch;
    highest_leader_ =
        fmt::format("{} (before this follower restarted)", log_.stored_leader().node_id);
  }
  auto listener = transport.listen(options_.listen);
  if (!listener.ok())
    return Error(listener.error().code(),
                 fmt::format("follower cannot listen on {}: {}", options_.listen.to_string(),
                             listener.error().message()));
  listener_ = std::move(listener).value();
  return listener_->local_endpoint();
}

void FollowerSessions::close() noexcept {
  listener_.reset();  // refuse new connections at once, not after the destructor
  std::lock_guard clock(carriers_mu_);
  lock_all(shards_, [&] {
    for (auto& sp : shards_) sp->conn = nullptr;
    for (auto& c : carriers_) c->conn->close();
    carriers_.clear();
    in_session_ = false;
    metrics_.leader_sessions.store(0, std::memory_order_relaxed);
  });
}

void FollowerSessions::drop(std::string_view why, bool protocol_error) noexcept {
  if (!in_session_) return;
  // A leader that goes away is routine (it reconnects); a bad batch is not.
  log::logf(protocol_error ? log::Level::error : log::Level::info,
            "rdmarepl follower {}: dropping the connections from leader {}: {}",
            endpoint_.to_string(), shards_.front()->leader, why);
  for (auto& c : carriers_) c->conn->close();
  // The shards' carrier pointers are cleared under their locks by the next session's
  // install(); until then nothing posts on them (send_ack and replies check in_session()).
  in_session_ = false;
  metrics_.leader_sessions.store(0, std::memory_order_relaxed);
}

void FollowerSessions::accept_loop() noexcept {
  // Handshakes run concurrently where the listener allows it (docs/replication.md,
  // "Handshakes"): a slow peer holds one thread, and a silent one none.
  const uint32_t threads = listener_->accepts_concurrently() ? kHandshakeThreads : 1;
  std::vector<std::thread> more;
  for (uint32_t i = 1; i < threads; ++i)
    more.emplace_back([this, i] {
      core::name_this_thread(Role::follower, "accept", static_cast<int>(i));
      accept_worker(false);
    });
  accept_worker(true);
  for (auto& t : more) t.join();
}

transport::ConnectionOptions FollowerSessions::accept_options() {
  transport::ConnectionOptions co;
  co.node_id = options_.node_id;
  co.pre_shared_key = options_.pre_shared_key;
  // Rings of generation 0, of generation 1, then large-record buffers of generation 0, of 1
  // (docs/wire_format.md, "Replication handshake").
  for (uint32_t g = 0; g < kBufferGenerations; ++g)
    for (auto& s : shards_) co.regions.push_back(s->rings[g].remote());
  for (uint32_t g = 0; g < kBufferGenerations; ++g)
    for (auto& s : shards_) co.regions.push_back(s->larges[g].remote());
  co.send_queue_depth = options_.queue_depth + 8;
  co.recv_queue_depth = options_.queue_depth + 8;
  // Every accepted connection (the first and every reconnect) gets its receives posted by the
  // transport before the leader learns it is up: the leader may send a batch as soon as its
  // connect() returns, before install() runs here, and a write-with-imm that meets an empty
  // receive queue is an RNR error. queue_depth + 4 receives: the leader keeps at most
  // queue_depth - 2 batches in flight (Link::post_batch), so some are always slack.
  co.initial_recvs = options_.queue_depth + 4;
  co.connect_timeout = options_.connect_timeout;
  co.max_handshakes = options_.max_handshakes;
  co.counters.timeouts = &metrics_.handshake_timeouts;
  co.counters.refused = &metrics_.handshakes_refused;
  // A leader this follower would refuse is told why in the handshake (a Reject in place of
  // Done); install() checks again, as a session may start in between.
  co.check_peer = [this](std::string_view node, std::string_view address,
                         std::string_view app_data) {
    return check_leader(node, address, app_data);
  };
  return co;
}

Status FollowerSessions::check_leader(std::string_view node, std::string_view address,
                                      std::string_view app_data) {
  const std::string who = fmt::format("{} ({})", node, address);
  auto h = parse_leader_hello(app_data, who);
  if (!h.ok() || h->carrier != 0) return ok_status();  // install() names what is wrong
  std::lock_guard lock(carriers_mu_);
  const std::string refused = leader_refusal(std::string(node), h->epoch, who);
  if (refused.empty()) return ok_status();
  ChannelMetrics::add(metrics_.leaders_refused);
  return Error(Errc::connection_refused, fmt::format("refused leader {}: {}", who, refused));
}

void FollowerSessions::refresh(FollowerHello& hello) noexcept {
  // The resume points may be stale by the time the leader reads them (a shard can still
  // apply from an old connection, one hello serves every connection accepted within the
  // accept timeout, and another thread may install a session meanwhile). A stale point
  // would make the leader resend batches this side skips by seq, but it would also hide
  // a follower that is ahead of a restarted leader: install() refuses a connection whose
  // shard moved past the point it was told, or back from it (a checkpoint received from
  // the leader was installed meanwhile), or whose buffer generation is now in use.
  // With Durability::batch the resume point is what the log has synced (the leader must
  // not count the rest); otherwise everything applied.
  // A connection accepted now writes to the buffers its shard's current connection does
  // not use. Only install() switches generations, under the install lock and the shard
  // locks, and only for a connection told the generation not in use at that moment, so a
  // connection never writes to the generation still being read.
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    hello.applied[s->index] = log_.resume_point(*s);
    hello.generation[s->index] = static_cast<uint8_t>(s->next_gen());
  }
}

void FollowerSessions::accept_worker(bool first) noexcept {
  transport::ConnectionOptions co = accept_options();
  FollowerHello hello;
  hello.shard_count = options_.shards;
  hello.queue_depth = options_.queue_depth;
  hello.ring_bytes = options_.ring_bytes;
  hello.large_bytes = shards_.front()->larges[0].size();
  hello.applied.resize(options_.shards);
  hello.generation.resize(options_.shards);
  while (host_.accepting()) {
    if (first && host_.checkpoint_waiting()) {
      std::lock_guard lock(install_mu_);
      host_.install_shipped();
    }
    refresh(hello);
    co.app_data = encode(hello);
    auto conn = listener_->accept(co, std::chrono::milliseconds(100));
    if (!conn.ok()) {
      // A refused peer was logged by the listener (rate-limited per address); what is left
      // is our own options, refused before any peer.
      if (transport::options_refused(conn.error()))
        log::error("rdmarepl follower {}: cannot accept connections: {}", endpoint_.to_string(),
                   conn.error().message());
      continue;
    }
    if (is_probe_hello((*conn)->peer().app_data)) {
      answer_probe(std::move(conn).value());
      continue;
    }
    std::lock_guard lock(install_mu_);
    install(std::move(conn).value(), hello);
  }
}

void FollowerSessions::answer_probe(std::unique_ptr<transport::Connection> conn) noexcept {
  const auto& info = conn->peer();
  const std::string who = fmt::format("{} ({})", info.node_id, info.address);
  Status st = parse_probe_hello(info.app_data, who);
  if (st.ok()) st = detail::answer_probe(*conn, Deadline::after(options_.connect_timeout));
  if (st.ok()) {
    ChannelMetrics::add(metrics_.probes_answered);
    log::info("rdmarepl follower {}: answered the probe of {}", endpoint_.to_string(), who);
  } else {
    log::warn("rdmarepl follower {}: probe of {} failed: {}", endpoint_.to_string(), who,
              st.error().message());
  }
  conn->close();
}

Status FollowerSessions::check_hello(const transport::PeerInfo& info, const Result<LeaderHello>& h,
                                     const std::string& who) const {
  if (!h.ok()) return h.error();
  const size_t large = shards_.front()->larges[0].size();
  if (h->shard_count != options_.shards)
    return Error(Errc::invalid_argument,
                 fmt::format("leader {} has {} shards but this follower has {}; configure the "
                             "same ChannelOptions::shards on both",
                             who, h->shard_count, options_.shards));
  if (h->ring_bytes > options_.ring_bytes || h->large_bytes > large ||
      h->queue_depth > options_.queue_depth)
    return Error(Errc::invalid_argument,
                 fmt::format("leader {} needs ring_bytes {}, large-record buffer {} and "
                             "queue_depth {}, this follower has {}, {} and {}; use the same "
                             "options on both",
                             who, h->ring_bytes, h->large_bytes, h->queue_depth,
                             options_.ring_bytes, large, options_.queue_depth));
  if (tag_bytes_ != 0 && !info.session_keys.set)
    return Error(Errc::auth_failed,
                 fmt::format("the connection from leader {} was authenticated but its transport "
                             "gave no session keys, so its batches could not be checked",
                             who));
  return ok_status();
}

void FollowerSessions::install(std::unique_ptr<transport::Connection> conn,
                               const FollowerHello& told) noexcept {
  const auto& info = conn->peer();
  const std::string who = fmt::format("{} ({})", info.node_id, info.address);
  auto h = parse_leader_hello(info.app_data, who);
  const Status st = check_hello(info, h, who);
  auto wrapped = st.ok() ? FollowerCarrier::wrap(conn, options_, memory_)
                         : Result<std::unique_ptr<FollowerCarrier>>(st.error());
  if (!wrapped.ok()) {
    log::error("rdmarepl follower {}: {}", endpoint_.to_string(), wrapped.error().message());
    conn->close();
    return;
  }
  std::lock_guard clock(carriers_mu_);
  if (h->carrier != 0)
    join_session(std::move(wrapped).value(), *h, who);
  else
    start_session(std::move(wrapped).value(), *h, told, who);
}

void FollowerSessions::join_session(std::unique_ptr<FollowerCarrier> c, const LeaderHello& h,
                                    const std::string& who) noexcept {
  // One more carrier of the current session.
  if (!in_session_ || h.session != session_ || c->conn->peer().node_id != session_leader_ ||
      h.epoch != session_epoch_) {
    log::info(
        "rdmarepl follower {}: carrier {} of session {} from leader {} does not belong "
        "to the current session; closing it",
        endpoint_.to_string(), h.carrier, h.session, who);
    c->conn->close();
    return;
  }
  carriers_.push_back(std::move(c));
}

void FollowerSessions::start_session(std::unique_ptr<FollowerCarrier> c, const LeaderHello& h,
                                     const FollowerHello& told, const std::string& who) noexcept {
  const std::string node = c->conn->peer().node_id;
  // Carrier 0 starts a session, unless another leader holds the shards.
  const std::string refused = leader_refusal(node, h.epoch, who);
  if (!refused.empty()) {
    ChannelMetrics::add(metrics_.leaders_refused);
    log::warn("rdmarepl follower {}: refused leader {}: {}", endpoint_.to_string(), who, refused);
    c->conn->close();
    return;
  }
  // Durable before the session starts: a restart never forgets an epoch it acted on.
  if (!log_.persist_leader_epoch(node, h.epoch, who)) {
    c->conn->close();
    return;
  }
  const bool takeover = in_session_ && node != session_leader_;
  const std::string previous = shards_.front()->leader;
  const std::string moved = begin_session(c, told, h.session, who);
  if (!moved.empty()) {
    log::info(
        "rdmarepl follower {}: {}; closing the connection so that it reconnects with the "
        "current point",
        endpoint_.to_string(), moved);
    c->conn->close();
    return;
  }
  if (takeover)
    log::warn(
        "rdmarepl follower {}: leader {} with epoch {} took over the shards from leader {} "
        "(epoch {})",
        endpoint_.to_string(), who, h.epoch, previous, session_epoch_);
  session_epoch_ = h.epoch;
  if (h.epoch >= highest_epoch_) {
    highest_epoch_ = h.epoch;
    highest_leader_ = who;
  }
}

std::string FollowerSessions::leader_refusal(const std::string& node, uint64_t epoch,
                                             const std::string& who) const {
  // A follower bound to one leadership (ChannelOptions::leader_epoch set, as a failover
  // group's members are) takes no other: neither the deposed one nor a newer one it has
  // not been told of.
  if (options_.leader_epoch == std::numeric_limits<uint64_t>::max())
    return fmt::format(
        "its epoch {} is not one this follower serves: it accepts no leader until its "
        "failover node is told which one leads",
        epoch);
  if (options_.leader_epoch != 0 && epoch != options_.leader_epoch)
    return fmt::format(
        "its epoch {} is not epoch {}, the only one this follower serves "
        "(ChannelOptions::leader_epoch); a failover group's member follows the leader its "
        "coordinator names",
        epoch, options_.leader_epoch);
  // A leader older than one already accepted: a deposed leader that came back.
  if (epoch < highest_epoch_)
    return fmt::format(
        "its epoch {} is below epoch {} of leader {}, which this follower already accepted; "
        "a deposed leader is never taken back (start the leader meant to lead with a "
        "leader_epoch above {})",
        epoch, highest_epoch_, highest_leader_, highest_epoch_);
  // Another identity may take the shards from a live leader only with a higher epoch.
  if (in_session_ && node != session_leader_ && epoch <= session_epoch_)
    return fmt::format(
        "live leader {} (epoch {}) holds the shards and {} has epoch {}; a new leader takes "
        "over only with a higher leader_epoch (docs/replication.md, \"Leader identity and "
        "epoch\")",
        shards_.front()->leader, session_epoch_, who, epoch);
  return {};
}

std::string FollowerSessions::begin_session(std::unique_ptr<FollowerCarrier>& conn,
                                            const FollowerHello& told, uint32_t session,
                                            const std::string& who) noexcept {
  // Every shard resumes where this handshake told the leader, or the session is refused.
  std::string moved;
  lock_all(shards_, [&] {
    for (auto& sp : shards_) {
      FollowerShard& s = *sp;
      const uint64_t now = log_.resume_point(s);
      // Ahead: it applied more through an old session. Behind: a checkpoint installed since
      // moved it back (the leader would resume after a seq this shard no longer has).
      if (now != told.applied[s.index] && moved.empty())
        moved = fmt::format("shard {}: the handshake told leader {} seq {} but it is at {} now",
                            s.index, who, told.applied[s.index], now);
      // Another handshake's session was installed since this one's hello: the generation
      // it was told is the one in use now.
      if (told.generation[s.index] != s.next_gen() && moved.empty())
        moved = fmt::format(
            "shard {}: the handshake told leader {} buffer generation {}, which a session "
            "installed since uses",
            s.index, who, told.generation[s.index]);
    }
    if (!moved.empty()) return;
    if (in_session_) {
      log::info("rdmarepl follower {}: leader {} reconnected; the old connections are closed",
                endpoint_.to_string(), who);
      ChannelMetrics::add(metrics_.reconnects);
    }
    for (auto& c : carriers_) c->conn->close();
    carriers_.clear();
    for (auto& sp : shards_) {
      FollowerShard& s = *sp;
      // From here on the poller reads only the generation this session writes to; the old
      // session (closed above, under the same locks) used the other one.
      s.gen = told.generation[s.index];
      s.conn = nullptr;
      s.leader = who;
      s.cursor = 0;
      s.unacked_batches = 0;
      s.consumed_seq = 0;
      if (!s.ship.ready()) s.ship.reset();  // a checkpoint is shipped again from its start
      // The leader resumes from the seq of the handshake (at most this): acknowledging it
      // again would spend an acknowledgement no batch paid for.
      s.last_ack_sent = s.acked.load(std::memory_order_relaxed);
    }
    // The receives were posted by accept() (ConnectionOptions::initial_recvs).
    session_leader_ = conn->conn->peer().node_id;
    carriers_.push_back(std::move(conn));
    session_ = session;
    in_session_ = true;
    metrics_.leader_sessions.store(1, std::memory_order_relaxed);
    end_session_.store(false, std::memory_order_relaxed);
  });
  return moved;
}

}  // namespace rdmarepl::replication::detail
