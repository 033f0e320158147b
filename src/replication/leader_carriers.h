// The connections that carry one follower's shards ("carriers": a QP on verbs, a socket on
// TCP). A fixed set of shards is carried by N active carriers per follower, where N is the
// live QP-count knob (tuning::Knobs::shards): shard i prefers carrier i % N and moves there
// only with nothing in flight (Link::post_batch), so its batches stay in order. The
// connections come from the follower's QP manager (src/transport/qp_manager.h): carriers at
// N and above that no shard uses any more are released to its pool, still connected, and
// taken again from it when N grows; it resizes the active carriers' completion queues when
// N changes. All carriers of a follower share one session (one handshake,
// one set of resume points and buffer generations): when one fails, the session ends and
// the control thread starts a new one. See docs/replication.md, "Carriers".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/transport/transport.h"
#include "registered_buffer.h"
#include "transport/qp_manager.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

struct Carrier {
  // Guards conn (set and closed by the control thread) and its data path: posting, polling,
  // re-posting receives and waiting. Taken after a shard lock, never before one.
  std::mutex mu;
  std::unique_ptr<transport::Connection> conn;
  std::atomic<bool> up{false};
  uint32_t inflight = 0;  // mu: batches posted on it, not yet acknowledged
  // Links whose current carrier this is. Raised under mu (Link::post_batch), so that the
  // control thread can pool the carrier under mu when it is 0; install() raises carrier
  // 0's without it: carrier 0 is never pooled (N >= 1).
  std::atomic<uint32_t> users{0};
  // With a pre-shared key: what authenticates the writes posted on conn (mu; reset with
  // each new connection), and the registered slots its tags are written from, reused
  // round-robin (a slot is written again only after enough later writes that the follower
  // has received it: see seal()).
  WriteMac mac;
  std::byte* tags = nullptr;
  uint32_t tags_lkey = 0;
  uint32_t tag_slots = 0;
  // And what checks the follower's acknowledgements and checkpoint replies: each writes its
  // tag into slot `counter mod tag_slots` of `reply_tags` (registered for remote write, the
  // second region this carrier's hello advertises). The leader posts tag_slots - 4
  // receives and re-posts them only after it checked the tags that consumed them, so a
  // slot is never overwritten before it was read.
  WriteMac reply_mac;
  const std::byte* reply_tags = nullptr;
  transport::RemoteRegion reply_region{};

  // Caller holds mu and conn is set. Posts `wr` on conn, sealed first when authentication
  // is on (its tag, over its immediate and every byte it writes, appended as its last
  // segment); `invalid` when `wr` has no segment left for the tag. The digest of its bytes
  // comes from `digest` when that holds one, and is kept there otherwise. A write that was
  // not posted gives its counter back.
  transport::PostStatus post(transport::WriteRequest& wr, DigestCache* digest = nullptr) noexcept;
  // Whether the tag of the reply `e` (an acknowledgement or checkpoint reply that arrived on
  // this carrier) is right; caller holds mu, before the receive it consumed is posted again.
  [[nodiscard]] bool authentic(const transport::Completion& e) noexcept;
};

struct FollowerCarriers {
  uint32_t follower = 0;
  ChannelMetrics* metrics = nullptr;
  uint32_t queue_depth = 0;  // batches a follower takes per connection (it posts more receives)
  // A pre-shared key is set: every write to the follower carries a tag (write_mac.h), and
  // `tags` holds every carrier's tag slots.
  bool keyed = false;
  RegisteredBuffer tags;
  RegisteredBuffer reply_tags;
  std::vector<std::unique_ptr<Carrier>> slots;  // ChannelOptions::shards of them at most
  // Control thread: makes the carriers' connections and pools the idle ones (cleared when
  // the session ends: its connections belong to the session).
  std::unique_ptr<transport::QpManager> qps;
  std::atomic<uint32_t> active{1};  // N: carriers shards are spread over
  std::atomic<bool> up{false};      // a session is established
  std::atomic<bool> failed{false};  // the session is over: its links go down
  std::mutex why_mu;
  std::string why;       // why_mu: what ended the session
  uint32_t session = 0;  // control thread: the session id the hellos carry
  // Control thread: reconnect backoff (see LeaderSessions::start_session()).
  uint64_t next_attempt_ns = 0;
  uint64_t backoff_ns = 0;
  std::string last_error;
  // Set when a session in which a link made progress ended: the next attempt starts the
  // backoff again from reconnect_interval.
  std::atomic<bool> proven{false};

  // The carrier a shard should post on now: shard % N when that one is up, else the one it
  // is on when that is still active and up, else carrier 0.
  [[nodiscard]] uint32_t target(uint32_t shard, uint32_t current) const noexcept {
    const uint32_t n = active.load(std::memory_order_relaxed);
    const uint32_t want = shard % n;
    if (slots[want]->up.load(std::memory_order_acquire)) return want;
    if (current < n && slots[current]->up.load(std::memory_order_acquire)) return current;
    return 0;
  }
  // Ends the session (first reason wins); the control thread tears it down.
  void fail(std::string_view reason) {
    std::lock_guard lock(why_mu);
    if (failed.load(std::memory_order_relaxed)) return;
    why = std::string(reason);
    failed.store(true, std::memory_order_release);
  }
  [[nodiscard]] std::string reason() {
    std::lock_guard lock(why_mu);
    return why;
  }
};

}  // namespace rdmarepl::replication::detail
