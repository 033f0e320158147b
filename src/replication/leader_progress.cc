// Leader: acknowledgements and progress. The pollers (and writers waiting for room) take
// the acknowledgements the carriers' completions left in each link's mailbox
// (LeaderReplies::poll_carrier()), take a link down when its session failed or it went
// silent, seal aged batches, send what credits allow, move the commit point and refresh the
// channel-wide metrics. See docs/replication.md, "Threading and progress".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>

#include "imm.h"
#include "leader.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

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
  FollowerCarriers& fc = sessions_.follower(l.follower);
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
    FollowerCarriers& fc = sessions_.follower(l->follower);
    // The shard's own carrier, so that a writer waiting for the window (reserve()) or a
    // manual-polling store sees its acknowledgements; other pollers only try its lock.
    work += sessions_.replies().poll_carrier(fc, *fc.slots[l->carrier]);
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
  writes_.release_acked_values(s);
  s.retained_bytes.store(s.window.space().used(), std::memory_order_relaxed);
  return work;
}

size_t Leader::progress() noexcept {
  size_t work = 0;
  std::array<uint64_t, kMaxFollowers> lag{};
  std::array<uint64_t, kMaxFollowers> lag_bytes{};
  uint64_t depth = 0;
  uint64_t retained = 0;
  work += sessions_.replies().poll(0, 1);
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
    bool up = sessions_.follower(static_cast<uint32_t>(i)).up.load(std::memory_order_relaxed);
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

}  // namespace rdmarepl::replication::detail
