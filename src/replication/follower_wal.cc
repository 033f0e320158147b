// The follower's write-ahead log (follower_wal.h): recovery at create() (store and applied
// seqs), logging each verified batch before it is applied, and acknowledging only what the
// log has synced (Durability::batch). See docs/replication.md, "Durability".
#include "follower_wal.h"

#include <fmt/format.h>

#include <thread>

#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

Status FollowerLog::open() {
  if (options_.wal_dir.empty()) {
    // Without a log, a DurableStore's own position is where this follower resumes.
    if (hooks_.durable_seq != nullptr)
      for (auto& sp : shards_) {
        const uint64_t seq = hooks_.durable_seq(hooks_.store, sp->index);
        sp->applied.store(seq, std::memory_order_release);
        sp->acked.store(seq, std::memory_order_release);
        sp->durable_seq = seq;
      }
    return ok_status();
  }
  Wal::Recovered rec;
  auto w = Wal::open(options_, hooks_, nullptr, &rec, &metrics_);
  if (!w) return std::move(w).error();
  wal_ = std::move(*w);
  for (auto& sp : shards_) {
    FollowerShard& s = *sp;
    const uint64_t seq = rec.shard_seq[s.index];
    s.applied.store(seq, std::memory_order_release);
    s.acked.store(seq, std::memory_order_release);
    s.durable_seq = seq;
    if (wal_->gates()) s.pending.resize(size_t{options_.queue_depth} + 8);
  }
  return ok_status();
}

Status FollowerLog::load_leader_epoch() {
  if (options_.wal_dir.empty()) return ok_status();
  auto loaded = load_accepted_leader(options_.wal_dir);
  if (!loaded.ok()) return std::move(loaded).error();
  if (!loaded->has_value()) return ok_status();
  stored_leader_ = std::move(**loaded);
  log::info("rdmarepl follower: leaders with an epoch below {} are refused (leader {} had it; {})",
            stored_leader_.epoch, stored_leader_.node_id, kLeaderEpochFile);
  return ok_status();
}

bool FollowerLog::persist_leader_epoch(const std::string& node, uint64_t epoch,
                                       const std::string& who) noexcept {
  if (options_.wal_dir.empty() || epoch < stored_leader_.epoch ||
      (epoch == stored_leader_.epoch && node == stored_leader_.node_id))
    return true;
  AcceptedLeader next{epoch, node};
  const Status st = store_accepted_leader(options_.wal_dir, next);
  if (!st.ok()) {
    log::error(
        "rdmarepl follower {}: refused leader {}: its epoch {} could not be kept across "
        "restarts: {}",
        endpoint_.to_string(), who, epoch, st.error().message());
    return false;
  }
  stored_leader_ = std::move(next);
  return true;
}

void FollowerLog::start() {
  if (!wal_) return;
  wal_->start([this](const std::function<void()>& fn) { lock_all(shards_, fn); });
}

void FollowerLog::close() noexcept {
  if (wal_) wal_->close();
}

bool FollowerLog::append(FollowerShard& s, const BatchView& v,
                         std::span<const std::byte> bytes) noexcept {
  if (!wal_) return true;
  const uint64_t last = v.header.first_seq + v.header.record_count - 1;
  const uint64_t lsn = wal_->append(s.index, bytes, last, v.header.record_count);
  if (lsn == Wal::kFailed) return false;
  if (!wal_->gates()) return true;
  // The leader keeps fewer than queue_depth batches unacknowledged, so the queue has room;
  // should it not, wait for the syncer rather than lose track of a batch.
  while (s.pending_count == s.pending.size()) {
    (void)ack_seq(s);
    if (s.pending_count == s.pending.size()) std::this_thread::yield();
  }
  s.pending[(s.pending_head + s.pending_count) % s.pending.size()] = {lsn, last};
  ++s.pending_count;
  return true;
}

uint64_t FollowerLog::ack_seq(FollowerShard& s) noexcept {
  if (!wal_ || !wal_->gates()) return s.applied.load(std::memory_order_relaxed);
  while (s.pending_count != 0 && wal_->durable(s.pending[s.pending_head].lsn)) {
    s.durable_seq = s.pending[s.pending_head].last_seq;
    s.pending_head = (s.pending_head + 1) % s.pending.size();
    --s.pending_count;
  }
  // Nothing waiting for a sync: every applied batch is in the synced log (batches that
  // were wholly duplicates are not logged again).
  if (s.pending_count == 0) s.durable_seq = s.applied.load(std::memory_order_relaxed);
  return s.durable_seq;
}

uint64_t FollowerLog::resume_point(FollowerShard& s) noexcept {
  const uint64_t seq = ack_seq(s);
  s.acked.store(seq, std::memory_order_release);
  return seq;
}

}  // namespace rdmarepl::replication::detail
