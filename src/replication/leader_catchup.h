// Catch-up of followers older than the leader's retained window, from its write-ahead log: a
// thread streams the logged batches a follower needs, oldest first, one in flight and paced
// by ChannelOptions::catchup_bytes_per_sec, until the window holds the follower's next seq;
// when the log no longer reaches back that far it ships the leader's newest checkpoint
// first. Batches go out through Link::post_batch(), as live ones do. See docs/replication.md,
// "Catch-up from the log" and "Shipping a checkpoint".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "checkpoint_ship.h"
#include "durability.h"
#include "leader_shard.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/wal/checkpoint.h"
#include "rdmarepl/wal/reader.h"

namespace rdmarepl::replication::detail {

// What catch-up needs of the leader. Both are called with the shard's lock held.
class CatchUpHost {
 public:
  // Drops the connection of `l` and logs `why`; the control thread reconnects it.
  virtual void link_down(Shard& s, Link& l, std::string_view why) noexcept = 0;
  // Sends what the retained window holds to the links that take from it.
  virtual void send_pending(Shard& s) noexcept = 0;

 protected:
  ~CatchUpHost() = default;
};

class CatchUp {
 public:
  // `shards` and `host` must outlive this object; the links are read under their shard lock.
  CatchUp(const ChannelOptions& options, ChannelMetrics& metrics, Wal& wal,
          std::vector<std::unique_ptr<Shard>>& shards, CatchUpHost& host);
  ~CatchUp() { stop(); }
  CatchUp(const CatchUp&) = delete;
  CatchUp& operator=(const CatchUp&) = delete;

  void start();
  // Ends the thread (safe to call more than once).
  void stop() noexcept;

 private:
  // One catch-up pass: connection `generation` of `l`.
  struct Pass {
    Shard& s;
    Link& l;
    uint64_t generation = 0;
    uint64_t acked = 0;  // the follower's acknowledged seq when last looked at
    uint64_t sent = 0;   // batches read back and sent
  };
  enum class Window : uint8_t { over, live, log };
  enum class Sent : uint8_t { skipped, found, failed };

  void loop() noexcept;
  // Streams the logged batches `l` needs until the window holds its next seq. True when the
  // link went live (it continues from the window).
  bool serve(Shard& s, Link& l) noexcept;
  // Under the shard lock: whether the pass is over, the link went live (the window holds
  // its next seq and nothing is in flight), or it needs the log; then `limit` is the first
  // seq the window holds.
  Window check_window(Pass& p, uint64_t& limit) noexcept;
  // The end of the log came without the follower's next seq twice in a row: ships the
  // newest checkpoint, or drops the link saying why it cannot.
  void ship_or_drop(Pass& p) noexcept;
  // Sends one logged batch when the follower needs it and the window does not hold it
  // (`limit`), and waits for its acknowledgement.
  Sent send_frame(Pass& p, const wal::Frame& f, uint64_t limit) noexcept;
  // Posts the batch in the staging buffer once the link has room.
  bool post_staged(Pass& p, uint64_t len, bool large, uint64_t last) noexcept;
  // True once the pass that serves connection `generation` of `l` must end: the link went
  // down, left catch-up, or reconnected (the next pass starts over). Under the shard lock.
  static bool over(const Link& l, uint64_t generation) noexcept;

  // Checkpoint shipping (leader_ship.cc). Ships the newest checkpoint to a follower that
  // needs shard `p.s` after `p.acked`, which the log no longer holds. Ok once the follower
  // installed it (its acked seq moved to the checkpoint's); otherwise the reason, and the
  // link is down or the pass is over.
  Status ship_checkpoint(Pass& p);
  // Waits until nothing is in flight on the link, then marks it shipping.
  Status claim_link(Pass& p);
  // Posts the chunk in the staging buffer (`bytes` with its header).
  // `covers`: the checkpoint's seq with its last chunk (0 before), which the follower may
  // acknowledge once it installed it.
  Status post_chunk(Pass& p, uint64_t bytes, uint64_t covers);
  // Waits for the follower's reply to chunk number `replies`, which ends at `offset` of
  // `total`; the last one moves the follower's acked seq to `covers`.
  Status await_reply(Pass& p, uint32_t replies, uint64_t offset, uint64_t total, uint64_t len,
                     uint64_t covers);

  // Rate limit: sleeps, with no lock held, until `bytes` may be sent. False when stopping.
  bool pace(uint64_t bytes) noexcept;
  [[nodiscard]] bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }
  // Sleeps up to `d` or until stop(). False once stopping.
  bool sleep_for(std::chrono::nanoseconds d);

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  Wal& wal_;
  std::vector<std::unique_ptr<Shard>>& shards_;
  CatchUpHost& host_;
  TokenBucket bucket_;  // catch-up thread only
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::thread thread_;
};

}  // namespace rdmarepl::replication::detail
