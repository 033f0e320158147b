// Catch-up from the write-ahead log: the thread, one pass per catching-up connection, and
// the rate limit. Checkpoint shipping is in leader_ship.cc.
#include "leader_catchup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "batch_limits.h"
#include "core/thread_name.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

CatchUp::CatchUp(const ChannelOptions& options, ChannelMetrics& metrics, Wal& wal,
                 std::vector<std::unique_ptr<Shard>>& shards, CatchUpHost& host)
    : options_(options), metrics_(metrics), wal_(wal), shards_(shards), host_(host) {
  if (options_.catchup_bytes_per_sec != 0)  // up to 100 ms of it saved up
    bucket_ = TokenBucket(options_.catchup_bytes_per_sec,
                          std::max<uint64_t>(options_.catchup_bytes_per_sec / 10, 1), mono_ns());
}

void CatchUp::start() {
  thread_ = std::thread([this] { loop(); });
}

void CatchUp::stop() noexcept {
  {
    std::lock_guard lock(stop_mu_);
    stop_.store(true, std::memory_order_release);
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CatchUp::sleep_for(std::chrono::nanoseconds d) {
  std::unique_lock lock(stop_mu_);
  stop_cv_.wait_for(lock, d, [this] { return stopping(); });
  return !stopping();
}

bool CatchUp::pace(uint64_t bytes) noexcept {
  const uint64_t wait = bucket_.take(bytes, mono_ns());
  return wait == 0 || sleep_for(std::chrono::nanoseconds(wait));
}

bool CatchUp::over(const Link& l, uint64_t generation) noexcept {
  return !l.up.load(std::memory_order_relaxed) || !l.wal_catchup || l.generation != generation;
}

void CatchUp::loop() noexcept {
  core::name_this_thread(Role::leader, "catchup");
  while (!stopping()) {
    bool any = false;
    for (auto& sp : shards_)
      for (auto& lp : sp->links) {
        bool needed = false;
        {
          std::lock_guard lock(sp->mu);
          needed = lp->up.load(std::memory_order_relaxed) && lp->wal_catchup;
        }
        if (needed && !stopping()) {
          any = true;
          (void)serve(*sp, *lp);
        }
      }
    if (!any && !sleep_for(std::chrono::milliseconds(10))) return;
  }
}

// Streams the logged batches a follower needs, oldest first, one in flight at a time (the
// rate limit: live traffic to the other followers is not held up, and this link's share is
// one batch per round trip), until the retained window holds its next seq; then the link
// continues from the window. The batches read back were evicted from the window, so they
// are durable.
bool CatchUp::serve(Shard& s, Link& l) noexcept {
  Pass p{s, l};
  {
    std::lock_guard lock(s.mu);
    p.generation = l.generation;
    p.acked = l.acked_seq.load(std::memory_order_relaxed);
  }
  // Start at the segment that can hold the follower's next seq, not at the oldest one.
  auto reader = wal::LogReader::open(wal_.dir(), nullptr, wal_.catchup_segment(s.index, p.acked));
  if (!reader) {
    std::lock_guard lock(s.mu);
    host_.link_down(s, l,
                    fmt::format("reading the write-ahead log for catch-up failed: {}",
                                reader.error().message()));
    return false;
  }
  bool found_in_pass = false;
  int misses = 0;  // passes in a row that did not find the follower's next seq
  wal::Frame f;
  for (;;) {
    if (stopping()) return false;
    uint64_t limit = 0;  // first seq the window holds
    const Window w = check_window(p, limit);
    if (w != Window::log) return w == Window::live;
    auto more = reader->next(&f);
    if (!more) {
      std::lock_guard lock(s.mu);
      host_.link_down(s, l,
                      fmt::format("reading the write-ahead log {} for catch-up failed: {}",
                                  wal_.dir(), more.error().message()));
      return false;
    }
    if (!*more) {
      misses = found_in_pass ? 0 : misses + 1;
      // The second pass in a row without the follower's next seq (the first may have loaded
      // its segments just before that batch was logged and evicted from the window): the log
      // no longer holds it (segments before a checkpoint are deleted) and the window does
      // not either. Ship the newest checkpoint, after which the log holds every batch.
      if (misses >= 2) {
        ship_or_drop(p);
        return false;  // after a checkpoint, the next pass streams the log after it
      }
      // Frames appended after this pass loaded its segments: read the log again.
      auto again =
          wal::LogReader::open(wal_.dir(), nullptr, wal_.catchup_segment(s.index, p.acked));
      if (!again) return false;
      reader = std::move(again);
      found_in_pass = false;
      continue;
    }
    const Sent r = send_frame(p, f, limit);
    if (r == Sent::failed) return false;
    if (r == Sent::found) found_in_pass = true;
  }
}

CatchUp::Window CatchUp::check_window(Pass& p, uint64_t& limit) noexcept {
  std::lock_guard lock(p.s.mu);
  if (over(p.l, p.generation)) return Window::over;
  p.acked = p.l.acked_seq.load(std::memory_order_relaxed);
  if (p.l.inflight_count == 0) {
    if (auto bn = p.s.window_resume(p.acked)) {
      p.l.next_send_bn = *bn;
      p.l.wal_catchup = false;
      log::info(
          "rdmarepl leader: follower {} shard {}: caught up from the write-ahead log ({} "
          "batches); continuing from the retained window",
          options_.peers[p.l.follower].to_string(), p.s.index, p.sent);
      host_.send_pending(p.s);
      return Window::live;
    }
  }
  limit = p.s.window.first_seq(p.s.sealed_last() + 1);
  return Window::log;
}

void CatchUp::ship_or_drop(Pass& p) noexcept {
  auto st = ship_checkpoint(p);
  if (st) return;
  std::lock_guard lock(p.s.mu);
  if (!over(p.l, p.generation))
    host_.link_down(p.s, p.l,
                    fmt::format("it needs shard {} from seq {}, which neither the retained "
                                "window nor the write-ahead log {} holds any more, and shipping "
                                "the leader's newest checkpoint failed: {}",
                                p.s.index, p.acked + 1, wal_.dir(), st.error().message()));
}

CatchUp::Sent CatchUp::send_frame(Pass& p, const wal::Frame& f, uint64_t limit) noexcept {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(f.payload.data()),
                                         f.payload.size());
  BatchView v;
  if (parse_batch(bytes, v) != BatchError::ok || v.header.shard != p.s.index ||
      v.header.record_count == 0)
    return Sent::skipped;
  const uint64_t first = v.header.first_seq;
  const uint64_t last = first + v.header.record_count - 1;
  if (last <= p.acked) return Sent::skipped;
  // A gap: reported at the end of the pass unless a later pass finds the frame.
  if (first > p.acked + 1) return Sent::skipped;
  if (last >= limit) return Sent::found;  // the window holds it: the next round switches to it
  const size_t len = v.padded_size();
  if (len > p.s.staging.size()) {  // written under other options: it can never be sent
    std::lock_guard lock(p.s.mu);
    if (!over(p.l, p.generation))
      host_.link_down(
          p.s, p.l,
          fmt::format("it needs shard {} seq {}..{}, which the write-ahead log {} holds in a "
                      "batch of {} bytes, but the largest batch these options allow is {} "
                      "bytes (the log was written with a larger ring_bytes or "
                      "max_value_bytes): restart this leader with the options that wrote the "
                      "log, or restore the follower from a snapshot",
                      p.s.index, first, last, wal_.dir(), len, p.s.staging.size()));
    return Sent::failed;
  }
  if (!pace(len)) return Sent::failed;
  // The staging buffer is free: the previous batch of this thread was acknowledged.
  std::memcpy(p.s.staging.data(), bytes.data(), len);
  if (!post_staged(p, len, large_batch(options_, v.header.record_count, len), last))
    return Sent::failed;
  while (p.l.acked_seq.load(std::memory_order_acquire) < last) {
    if (stopping() || !p.l.up.load(std::memory_order_acquire)) return Sent::failed;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return Sent::found;
}

bool CatchUp::post_staged(Pass& p, uint64_t len, bool large, uint64_t last) noexcept {
  for (;;) {
    if (stopping()) return false;
    {
      std::lock_guard lock(p.s.mu);
      if (over(p.l, p.generation)) return false;
      const auto r =
          p.l.post_batch(p.s.staging.data(), p.s.staging.lkey(), len, large, last, UINT64_MAX);
      if (r == Link::Post::posted) {
        ++p.sent;
        ChannelMetrics::add(metrics_.batches_resent);
        ChannelMetrics::add(metrics_.catchup_bytes, len);
        ChannelMetrics::add(p.l.catchup_bytes, len);
        return true;
      }
      if (r == Link::Post::disconnected || r == Link::Post::refused) {
        host_.link_down(p.s, p.l, "a catch-up write from the log failed");
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace rdmarepl::replication::detail
