// The leader's commit callbacks (LeaderCommits): on_commit() registration, firing from progress(),
// and failing what can no longer commit (closed channel, AwayPolicy::fail).
#include <fmt/format.h>

#include "leader_commits.h"

namespace rdmarepl::replication::detail {

namespace {

Status closed_error(uint64_t seq, uint32_t shard) {
  return Error(Errc::closed, fmt::format("the replication channel was closed before seq {} of "
                                         "shard {} met the ack mode",
                                         seq, shard));
}

}  // namespace

Status LeaderCommits::on_commit(Ticket t, CommitFn fn, void* ctx) {
  if (fn == nullptr) return Error(Errc::invalid_argument, "on_commit: the callback is null");
  if (t.shard >= shards_.size() || t.seq == 0)
    return Error(Errc::invalid_argument,
                 fmt::format("on_commit: ticket (shard {}, seq {}) was not issued by this "
                             "channel ({} shards); pass the ticket replicate() returned",
                             t.shard, t.seq, shards_.size()));
  if (closed_.load(std::memory_order_acquire))
    return Error(Errc::closed, "on_commit: the replication channel is closed");
  Shard& s = *shards_[t.shard];
  if (committed(t)) {
    fn(ctx, t, ok_status());
    return ok_status();
  }
  if (!callbacks_.push(t, fn, ctx))
    return Error(Errc::busy,
                 fmt::format("on_commit: {} callbacks of shard {} are already pending "
                             "(ChannelOptions::max_pending_callbacks); wait for some to fire "
                             "(progress() runs them), raise the option, or use wait()",
                             callbacks_.capacity(), t.shard));
  // The commit point may have moved, or the channel closed, between the checks above and the
  // push: settle here so that the callback never waits for a progress() that may not come.
  callbacks_.fire_committed(t.shard, s.committed.load(std::memory_order_acquire));
  if (closed_.load(std::memory_order_acquire))
    callbacks_.fail_all(t.shard, [&](uint64_t seq) { return closed_error(seq, t.shard); });
  return ok_status();
}

size_t LeaderCommits::fire_callbacks() noexcept {
  if (!callbacks_.any_pending()) return 0;
  size_t fired = 0;
  for (auto& sp : shards_) {
    Shard& s = *sp;
    const uint64_t next = callbacks_.next_seq(s.index);
    if (next == CommitCallbacks::kNone) continue;
    const uint64_t committed = s.committed.load(std::memory_order_acquire);
    if (next <= committed) fired += callbacks_.fire_committed(s.index, committed);
    if (options_.away_policy != AwayPolicy::fail) continue;
    const uint64_t rest = callbacks_.next_seq(s.index);
    if (rest == CommitCallbacks::kNone) continue;
    Status first = away_failure(s, rest);
    if (first) continue;
    // A write that cannot meet the ack mode now cannot for any later seq of the shard either.
    fired += callbacks_.fail_all(s.index, [&](uint64_t seq) {
      Status st = away_failure(s, seq);
      return st ? first : st;
    });
  }
  return fired;
}

void LeaderCommits::fail_callbacks_on_close() noexcept {
  for (auto& sp : shards_) {
    const uint32_t shard = sp->index;
    // Writes committed before the close still report success.
    callbacks_.fire_committed(shard, sp->committed.load(std::memory_order_acquire));
    callbacks_.fail_all(shard, [shard](uint64_t seq) { return closed_error(seq, shard); });
  }
}

}  // namespace rdmarepl::replication::detail
