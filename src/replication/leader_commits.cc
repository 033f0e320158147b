// The leader's commit point under the ack mode and the waits on it. The commit callbacks are
// in leader_callbacks.cc.
#include "leader_commits.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::replication::detail {

void LeaderCommits::init(uint32_t shards, size_t max_pending_callbacks) {
  callbacks_.init(shards, max_pending_callbacks);
}

uint32_t LeaderCommits::required_acks() const noexcept {
  const auto n = static_cast<uint32_t>(options_.peers.size());
  switch (options_.ack_mode) {
    case AckMode::none:
      return 0;
    case AckMode::one:
      return 1;
    case AckMode::all:
      return n;
    case AckMode::quorum:
      return (n + 1) / 2;  // majority of n + 1 nodes, the leader included
  }
  return n;
}

uint64_t LeaderCommits::wal_durable_seq(Shard& s) noexcept {
  if (s.durable_bn < s.window.first_bn()) s.durable_bn = s.window.first_bn();
  while (s.durable_bn < s.window.end_bn()) {
    const BatchDesc& d = s.window.desc(s.durable_bn);
    if (!wal_->durable(d.lsn)) break;
    s.durable_seq = d.last_seq();
    ++s.durable_bn;
  }
  return s.durable_seq;
}

void LeaderCommits::update(Shard& s) noexcept {
  const uint64_t next = s.next_seq.load(std::memory_order_relaxed);
  uint64_t c = 0;
  if (options_.ack_mode == AckMode::none) {
    c = wal_ && wal_->gates() ? wal_durable_seq(s) : next - 1;
  } else {
    std::array<uint64_t, kMaxFollowers> acked{};
    const size_t n = s.links.size();
    for (size_t i = 0; i < n; ++i) acked[i] = s.links[i]->acked_seq.load(std::memory_order_relaxed);
    std::sort(acked.begin(), acked.begin() + static_cast<std::ptrdiff_t>(n), std::greater<>());
    const uint32_t k = required_acks();
    c = k == 0 || k > n ? 0 : acked[k - 1];
  }
  if (c > s.committed.load(std::memory_order_relaxed))
    s.committed.store(c, std::memory_order_release);
  const uint64_t committed = s.committed.load(std::memory_order_relaxed);
  const uint64_t now = mono_ns();
  // Batches evicted before their commit was seen are not timed.
  if (s.latency_bn < s.window.first_bn()) s.latency_bn = s.window.first_bn();
  while (s.latency_bn < s.window.end_bn() && s.window.desc(s.latency_bn).last_seq() <= committed) {
    const BatchDesc& d = s.window.desc(s.latency_bn);
    s.ack_latency_ns.record(now - d.t0_ns, d.count);
    ++s.latency_bn;
  }
}

bool LeaderCommits::committed(Ticket t) const noexcept {
  if (t.shard >= shards_.size()) return false;
  return shards_[t.shard]->committed.load(std::memory_order_acquire) >= t.seq;
}

std::string LeaderCommits::describe_missing(const Shard& s, uint64_t seq) const {
  std::string out;
  const uint64_t now = mono_ns();
  for (const auto& l : s.links) {
    const uint64_t acked = l->acked_seq.load(std::memory_order_acquire);
    if (acked >= seq) continue;
    if (!out.empty()) out += "; ";
    out += fmt::format("follower {} acked seq {}", options_.peers[l->follower].to_string(), acked);
    if (!l->up.load(std::memory_order_acquire))
      out += fmt::format(" and has been disconnected for {} ms",
                         (now - l->down_since_ns.load(std::memory_order_acquire)) / 1'000'000);
  }
  return out;
}

Status LeaderCommits::away_failure(const Shard& s, uint64_t seq) const {
  if (options_.away_policy != AwayPolicy::fail) return ok_status();
  const uint64_t away_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.away_timeout).count());
  const uint64_t now = mono_ns();
  uint32_t available = 0;
  for (const auto& l : s.links)
    if (l->up.load(std::memory_order_acquire) ||
        now - l->down_since_ns.load(std::memory_order_acquire) < away_ns ||
        l->acked_seq.load(std::memory_order_acquire) >= seq)
      ++available;
  if (available >= required_acks()) return ok_status();
  return Error(Errc::timeout,
               fmt::format("seq {} of shard {} cannot meet ack_mode={} ({} follower acks): {}; "
                           "away_policy=fail and away_timeout={} ms. Bring the follower back "
                           "(it is caught up from the retained window) or use "
                           "away_policy=wait",
                           seq, s.index, to_string(options_.ack_mode), required_acks(),
                           describe_missing(s, seq), options_.away_timeout.count()));
}

Status LeaderCommits::wait(Ticket t, std::chrono::milliseconds timeout) {
  if (t.shard >= shards_.size())
    return Error(Errc::invalid_argument, fmt::format("ticket names shard {} but the channel has {} "
                                                     "shards",
                                                     t.shard, shards_.size()));
  const Shard& s = *shards_[t.shard];
  const Deadline deadline = Deadline::after(timeout);
  bool flushed = false;
  for (;;) {
    if (committed(t)) return ok_status();
    if (closed_.load(std::memory_order_acquire))
      return Error(Errc::closed, "the replication channel was closed while waiting");
    if (!flushed) {  // a waiter should not also wait for flush_delay
      flushed = true;
      core_.flush();
    }
    if (auto away = away_failure(s, t.seq); !away) return away;
    if (deadline.expired())
      return Error(Errc::timeout,
                   fmt::format("seq {} of shard {} was not acknowledged under ack_mode={} within "
                               "{} ms: {}",
                               t.seq, t.shard, to_string(options_.ack_mode), timeout.count(),
                               describe_missing(s, t.seq)));
    if (options_.polling == PollingMode::manual) {
      if (core_.progress() == 0) std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

Status LeaderCommits::wait_all_acked(std::chrono::milliseconds timeout) {
  const Deadline deadline = Deadline::after(timeout);
  core_.flush();
  for (;;) {
    bool all = true;
    std::string missing;
    for (auto& sp : shards_) {
      const uint64_t last = sp->next_seq.load(std::memory_order_acquire) - 1;
      for (auto& l : sp->links)
        if (l->acked_seq.load(std::memory_order_acquire) < last) all = false;
      if (!all && deadline.expired()) missing = describe_missing(*sp, last);
      if (!all) break;
    }
    if (all) return ok_status();
    if (closed_.load(std::memory_order_acquire))
      return Error(Errc::closed, "the replication channel was closed while waiting");
    if (deadline.expired())
      return Error(Errc::timeout, fmt::format("not every follower acknowledged every write within "
                                              "{} ms: {}",
                                              timeout.count(), missing));
    if (options_.polling == PollingMode::manual) {
      if (core_.progress() == 0) std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace rdmarepl::replication::detail
