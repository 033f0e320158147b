// One follower as seen from one leader shard: the carrier (connection) it posts on, the ring
// and large-record buffer it writes to, the ring credits and the batches in flight, and its
// acknowledged seq. Fields without atomics are guarded by the shard's lock. post_batch() is
// the one way a batch reaches a follower, live from the retained window or read back from
// the log; it also moves the shard to another carrier (leader_carriers.h) when it has
// nothing in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leader_carriers.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/transport.h"
#include "ring_space.h"

namespace rdmarepl::replication::detail {

struct InFlight {
  uint64_t last_seq = 0;
  uint64_t ring_consumed = 0;  // 0 for a batch in the large-record buffer
  bool large = false;
  uint32_t carrier = 0;  // the carrier it was posted on
};

struct Link {
  uint32_t follower = 0;
  uint32_t shard = 0;
  FollowerCarriers* carriers = nullptr;  // the follower's carriers (outlive the link's use)
  uint32_t carrier = 0;                  // the carrier it posts on (while up)
  transport::RemoteRegion ring;
  transport::RemoteRegion large;
  RingSpace ring_space;
  std::vector<InFlight> inflight;  // circular, queue_depth entries
  size_t inflight_head = 0;
  size_t inflight_count = 0;
  bool large_busy = false;
  bool stalled = false;
  uint64_t next_send_bn = 0;
  std::atomic<uint64_t> acked_seq{0};
  // The follower's lag on this shard in records and in bytes of sealed batches after
  // acked_seq, as of the last progress round that held the shard's lock (metrics).
  std::atomic<uint64_t> lag_records{0};
  std::atomic<uint64_t> lag_bytes{0};
  // This link's part of batches_sent, credit_stalls, reconnects and catchup_bytes (written
  // under the shard lock, read by the metrics sweep).
  std::atomic<uint64_t> batches_sent{0};
  std::atomic<uint64_t> credit_stalls{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> catchup_bytes{0};
  // The newest seq the follower may acknowledge on this connection: its resume point at
  // install, then the last seq of each batch posted (and a shipped checkpoint's seq). An
  // acknowledgement beyond it is a protocol error.
  uint64_t sent_seq = 0;
  std::atomic<bool> up{false};
  std::atomic<uint64_t> down_since_ns{0};
  bool ever_connected = false;
  // Its resume point is older than the retained window: batches come from the write-ahead
  // log (catch-up thread) until the window reaches it; send_pending() skips it meanwhile.
  bool wal_catchup = false;
  uint64_t generation = 0;  // connections installed so far (a catch-up pass is per connection)
  // A checkpoint is being shipped on this connection (catch-up thread); the follower's
  // replies to its chunks so far and the last one (LeaderReplies::drain()).
  // Written by the carrier's poller (no shard lock), read under the shard lock.
  std::atomic<bool> shipping{false};
  std::atomic<uint32_t> ship_replies{0};
  std::atomic<uint32_t> ship_reply{0};
  // The newest acknowledgement the carrier's poller saw for this link, not yet processed:
  // kAckPresent | its 20-bit argument (0: none).
  static constexpr uint32_t kAckPresent = 1u << 31;
  std::atomic<uint32_t> ack_in{0};
  // Shard lock: whether the follower acknowledged records sent on this connection (its
  // acknowledged seq moved past the resume point).
  bool made_progress = false;
  // Shard lock: since when the follower owes an answer on this connection, for
  // ChannelOptions::ack_timeout: its last acknowledgement (install counts as one), or the
  // posting of a batch when nothing was in flight, whichever is later. A follower owes
  // nothing while idle, so an idle spell does not count against the next batch.
  uint64_t quiet_since_ns = 0;

  enum class Post : uint8_t {
    posted,
    no_room,       // no ring credit, the large-record buffer busy, or no receive of slack
    queue_full,    // the send queue is full: try again later
    disconnected,  // the connection failed
    refused,       // the transport refused the request
  };

  // Posts one batch of `len` bytes at `local` (registered with `lkey`) into the follower's
  // large-record buffer (`large`) or ring, when it has room for it and two receives of slack
  // (the follower posts queue_depth + 4), and records it in flight until an acknowledgement
  // of `last_seq` retires it.
  Post post_batch(const std::byte* local, uint32_t lkey, uint64_t len, bool large_batch,
                  uint64_t last_seq, uint64_t wr_id) noexcept {
    transport::WriteRequest bytes;
    bytes.local_addr = local;
    bytes.length = static_cast<uint32_t>(len);
    bytes.lkey = lkey;
    return post_batch(bytes, large_batch, last_seq, wr_id);
  }
  // The same for a batch whose bytes are gathered: `bytes` names its local segments (its
  // local_addr, length, lkey and extra ones); the rest of the request is filled in here.
  // `digest`: where the batch's digest is kept between its sends (Carrier::post()).
  Post post_batch(const transport::WriteRequest& bytes, bool large_batch, uint64_t last_seq,
                  uint64_t wr_id, DigestCache* digest = nullptr) noexcept;
  // Posts a request that is not a batch (a checkpoint chunk) on the link's carrier: the
  // immediate's shard is filled in here.
  transport::PostStatus post_raw(transport::WriteRequest wr) noexcept;
  // Why the carrier failed (for a log line), after post_batch() said disconnected.
  [[nodiscard]] std::string failure() const;
  // Whether the follower has batches in flight and answered nothing for more than
  // `limit_ns` (0: never) since it last answered or, had it nothing in flight, since the
  // oldest of them was posted. A connection shipping a checkpoint is exempt: the
  // catch-up thread bounds each chunk's wait itself.
  [[nodiscard]] bool silent(uint64_t limit_ns) const noexcept {
    return limit_ns != 0 && inflight_count > 0 && !shipping &&
           mono_ns() - quiet_since_ns > limit_ns;
  }
  // Retires the batches in flight that an acknowledgement of `seq` covers: their ring credit
  // or the large-record buffer is free again.
  void retire(uint64_t seq) noexcept;
  // Forgets everything in flight and the ring arithmetic (a connection went or came).
  void reset_flow() noexcept;
  // Leaves its carrier (the link goes down).
  void leave_carrier() noexcept;
};

}  // namespace rdmarepl::replication::detail
