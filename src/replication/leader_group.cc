// Leader: write groups (replicate_group()). A group's records are placed into one batch of
// one shard under the shard's lock, with consecutive seqs, every record but the last
// flagged kRecGroupNext; the batch is never sealed between them. See docs/replication.md,
// "Write groups".
#include "batch_limits.h"
#include "leader.h"
#include "rdmarepl/core/clock.h"
#include "shard.h"

namespace rdmarepl::replication::detail {

// Checks the group before anything is placed: one shard, sizes within the limits. Returns
// ok and the shard and record bytes, or why the group is refused.
WriteStatus Leader::check_group(std::span<const GroupOp> ops, uint32_t& shard,
                                size_t& bytes) const noexcept {
  if (ops.empty()) return WriteStatus::bad_group_size;
  shard = shard_of(ops.front().key, options_.shards);
  bytes = 0;
  for (const GroupOp& op : ops) {
    const size_t value = op.op == Op::put ? op.value.size() : 0;
    if (op.key.size() > kMaxKeyBytes || value > options_.max_value_bytes)
      return WriteStatus::too_large;
    if (shard_of(op.key, options_.shards) != shard) return WriteStatus::group_spans_shards;
    bytes += record_size(op.key.size(), value);
  }
  return bytes > group_limit_bytes() ? WriteStatus::bad_group_size : WriteStatus::ok;
}

WriteResult Leader::write_group(std::span<const GroupOp> ops) noexcept {
  WriteResult r;
  if (closed_.load(std::memory_order_acquire)) {
    r.status = WriteStatus::closed;
    return r;
  }
  if (ops.size() == 1) {  // a group of one is a single write
    const GroupOp& op = ops.front();
    return write(op.op, op.key, op.op == Op::put ? op.value : std::string_view());
  }
  uint32_t shard = 0;
  size_t bytes = 0;
  r.status = check_group(ops, shard, bytes);
  if (r.status != WriteStatus::ok) return r;
  Shard& s = *shards_[shard];
  const uint64_t ts = wall_ns();

  std::unique_lock lock(s.mu, std::try_to_lock);
  if (!lock.owns_lock()) s.lock_as_writer(lock);
  r.status = reserve(s, lock, bytes, false);  // room for the whole group in one batch
  if (r.status != WriteStatus::ok) return r;
  for (size_t i = 0; i < ops.size(); ++i) {
    const GroupOp& op = ops[i];
    const std::string_view value = op.op == Op::put ? op.value : std::string_view();
    s.open.add(op.op, op.key, value, ts, i + 1 < ops.size() ? kRecGroupNext : uint8_t{0});
    s.count_value(value.size());
  }
  const uint64_t seq = s.open.next_seq() - 1;
  s.next_seq.store(seq + 1, std::memory_order_release);
  ChannelMetrics::add(metrics_.records_replicated, ops.size());
  ChannelMetrics::add(metrics_.bytes_replicated, bytes);
  s.count_replicated(ops.size(), bytes);
  if (options_.ack_mode == AckMode::none && !(wal_ && wal_->gates()))
    s.committed.store(seq, std::memory_order_release);
  if (s.open.size() >= live_batch_bytes_.load(std::memory_order_relaxed)) {
    seal_open(s);
    send_pending(s);
  }
  r.ticket = Ticket{shard, seq};
  return r;
}

}  // namespace rdmarepl::replication::detail
