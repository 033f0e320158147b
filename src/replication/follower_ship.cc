// Follower side of checkpoint shipping (follower_ship.h): chunks arrive in the large-record
// buffer (one in flight), are checked (header CRC, continuity, running payload CRC32C) and
// copied aside by the shard's IncomingCheckpoint (follower_chunks.h); the accept thread
// installs a complete checkpoint (Store::restore and the seqs with every shard locked, then
// the follower's own log) and answers the last chunk. See docs/wire_format.md ("Checkpoint
// shipping") and docs/replication.md ("Durability").
#include "follower_ship.h"

#include <fmt/format.h>

#include "imm.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

bool ShippedCheckpoints::send_reply(FollowerShard& s, ShipReply reply) noexcept {
  return s.conn->post_reply(make_imm(ImmKind::checkpoint, s.index, static_cast<uint32_t>(reply))) ==
         transport::PostStatus::ok;
}

bool ShippedCheckpoints::handle_chunk(FollowerShard& s, uint32_t byte_len, std::string& why,
                                      bool& protocol) noexcept {
  protocol = true;
  ChunkHeader h;
  const std::span<const std::byte> in(s.large().data(),
                                      std::min<size_t>(byte_len, s.large().size()));
  if (!s.ship.check(in, byte_len, h, why)) return false;
  if (hooks_.restore == nullptr) {
    if (h.offset == 0)
      log::error(
          "rdmarepl follower {}: shard {}: refused the checkpoint leader {} sent (its log no "
          "longer reaches back to this follower): the store does not model SnapshottableStore; "
          "add snapshot/restore hooks to it, or restore this follower from a snapshot",
          endpoint_.to_string(), s.index, s.leader);
    return reply_to_chunk(s, ShipReply::no_restore, why, protocol);
  }
  if (h.offset == 0 && !start_checkpoint(s, h.id, h.total))
    return reply_to_chunk(s, ShipReply::failed, why, protocol);
  const auto* payload = reinterpret_cast<const uint8_t*>(s.large().data() + kChunkHeaderSize);
  if (!s.ship.take(h, payload, why)) return false;
  if (h.last()) {
    // Installing locks every shard and writes files: the accept thread does it.
    ready_.store(true, std::memory_order_release);
    return true;
  }
  return reply_to_chunk(s, ShipReply::chunk_ok, why, protocol);
}

bool ShippedCheckpoints::reply_to_chunk(FollowerShard& s, ShipReply reply, std::string& why,
                                        bool& protocol) noexcept {
  if (send_reply(s, reply)) return true;
  why = "sending the reply to a checkpoint chunk failed";
  protocol = false;
  return false;
}

bool ShippedCheckpoints::start_checkpoint(FollowerShard& s, uint64_t id, uint64_t total) noexcept {
  if (!s.ship.start(id, total)) {
    log::error(
        "rdmarepl follower {}: shard {}: no memory for the {}-byte checkpoint leader {} "
        "sent",
        endpoint_.to_string(), s.index, total, s.leader);
    return false;
  }
  log::info("rdmarepl follower {}: shard {}: receiving checkpoint {} ({} bytes) from leader {}",
            endpoint_.to_string(), s.index, id, total, s.leader);
  return true;
}

Status ShippedCheckpoints::restore(uint32_t shard, std::span<const uint8_t> snapshot,
                                   const std::vector<uint64_t>& seqs) {
  // The session is over: every shard's applied point moves, so the leader reconnects
  // (after the reply) with a handshake that reports the new ones. No batch of this
  // session is applied after this (the poller skips them).
  sessions_.end_session().store(true, std::memory_order_release);
  SpanSnapshotReader src(snapshot);
  src.set_seqs(seqs);
  auto st = hooks_.restore(hooks_.store, src);
  if (!st)
    return Error(st.error().code(),
                 fmt::format("Store::restore from the checkpoint received on shard {} failed: {}",
                             shard, st.error().message()));
  for (auto& sp : shards_) {
    FollowerShard& t = *sp;
    const uint64_t seq = seqs[t.index];
    t.applied.store(seq, std::memory_order_release);
    t.acked.store(seq, std::memory_order_release);
    t.durable_seq = seq;
    t.pending_head = t.pending_count = 0;
    t.consumed_seq = seq;
    t.last_ack_sent = seq;
    t.unacked_batches = 0;
  }
  return ok_status();
}

Status ShippedCheckpoints::install_payload(uint32_t shard, std::span<const uint8_t> payload) {
  auto seqs = parse_checkpoint_prefix(payload, options_.shards,
                                      fmt::format("the checkpoint received on shard {}", shard));
  if (!seqs) return std::move(seqs).error();
  const auto snapshot = payload.subspan(kChannelCheckpointFixed + 8 * size_t{options_.shards});
  auto locked = [&]() -> Status { return restore(shard, snapshot, *seqs); };
  if (log_.wal() != nullptr) return log_.wal()->install_checkpoint(payload, *seqs, locked);
  Status st = ok_status();
  lock_all(shards_, [&] { st = locked(); });
  return st;
}

void ShippedCheckpoints::install_shipped() noexcept {
  for (auto& sp : shards_) {
    FollowerShard& s = *sp;
    std::vector<uint8_t> payload;
    uint64_t id = 0;
    {
      std::lock_guard lock(s.mu);
      if (!s.ship.ready()) continue;
      payload = s.ship.release();
      id = s.ship.id();
    }
    // No shard lock is held here: install_payload() takes them all for the restore only and
    // writes the log's checkpoint file without them.
    const uint64_t t0 = mono_ns();
    Status st = ok_status();
    try {
      st = install_payload(s.index, payload);
    } catch (const std::exception& e) {
      st = Error(Errc::io_error, fmt::format("installing it failed: {}", e.what()));
    }
    if (st) {
      ChannelMetrics::add(metrics_.checkpoints_installed);
      log::info("rdmarepl follower {}: shard {}: installed checkpoint {} ({} bytes) in {} ms",
                endpoint_.to_string(), s.index, id, payload.size(), (mono_ns() - t0) / 1'000'000);
    } else {
      log::error("rdmarepl follower {}: shard {}: installing checkpoint {} failed: {}",
                 endpoint_.to_string(), s.index, id, st.error().message());
    }
    answer_install(s, st);
  }
}

void ShippedCheckpoints::answer_install(FollowerShard& s, const Status& st) noexcept {
  std::lock_guard clock(sessions_.mu());
  {
    std::lock_guard lock(s.mu);
    s.ship.reset();
    if (sessions_.in_session() && s.conn &&
        !send_reply(s, st ? ShipReply::installed : ShipReply::failed))
      sessions_.drop("sending the reply to a checkpoint chunk failed");
  }
  // After `installed` the leader starts a new session from the new seqs; after a failure
  // the session ends here (the store may have changed).
  if (!st && sessions_.end_session().exchange(false, std::memory_order_acq_rel))
    sessions_.drop(
        fmt::format("installing a checkpoint on shard {} failed; the leader reconnects "
                    "from this follower's seqs",
                    s.index));
}

}  // namespace rdmarepl::replication::detail
