// The leader's control plane towards its followers: one session per follower, carried by
// its carriers (leader_carriers.h). The control thread starts a session (carrier 0 with the
// handshake, then every shard's link), ends it when a carrier or link fails, connects the
// carriers below the live N, pools the idle ones above it and resizes their completion
// queues; its LeaderReplies drains the carriers' completions (leader_replies.h). The Leader
// owns one LeaderSessions and reaches it through the calls below; it is reached back through
// SessionHost only. See docs/replication.md, "Carriers" and "Handshakes".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "channel_memory.h"
#include "durability.h"
#include "hello.h"
#include "leader_carriers.h"
#include "leader_replies.h"
#include "leader_shard.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

// What the sessions need of the leader. Both are called with the shard's lock held.
class SessionHost {
 public:
  // Drops the connection of `l` and logs `why`; ends the follower's session.
  virtual void link_down(Shard& s, Link& l, std::string_view why) noexcept = 0;
  // Sends what the retained window holds to the links that take from it.
  virtual void send_pending(Shard& s) noexcept = 0;

 protected:
  ~SessionHost() = default;
};

class LeaderSessions {
 public:
  // Everything passed must outlive this object. `shards` may be filled after construction
  // (its links point to the carriers made by init()); `wal` is the leader's log slot (null
  // without wal_dir; it may be filled after construction).
  LeaderSessions(const ChannelOptions& options, ChannelMetrics& metrics,
                 transport::Transport& transport, ChannelMemory& memory,
                 const std::vector<std::unique_ptr<Shard>>& shards, const std::atomic<bool>& closed,
                 const std::unique_ptr<Wal>& wal, SessionHost& host)
      : options_(options),
        metrics_(metrics),
        transport_(transport),
        memory_(memory),
        shards_(shards),
        closed_(closed),
        wal_(wal),
        host_(host),
        replies_(metrics, shards, carriers_) {}
  LeaderSessions(const LeaderSessions&) = delete;
  LeaderSessions& operator=(const LeaderSessions&) = delete;

  // The carriers of every follower, with their QP managers and (keyed) tag slots. Once, at
  // create(), before the shards' links are made.
  Status init();
  [[nodiscard]] FollowerCarriers& follower(uint32_t f) const noexcept { return *carriers_[f]; }
  [[nodiscard]] size_t followers() const noexcept { return carriers_.size(); }

  // Control thread, one round for follower `fc`: ends a failed session, starts one when the
  // backoff allows, and adjusts an established one's carriers to N.
  void tend(FollowerCarriers& fc) noexcept;
  // A session with follower `fc`: carrier 0 with the handshake, then every shard's link.
  bool start_session(FollowerCarriers& fc) noexcept;
  // Live knob: N carriers per follower (the control thread follows).
  void set_active(uint32_t n) noexcept;
  // close(): every carrier of every follower closes.
  void close() noexcept;

  // The pollers' side: the followers' replies.
  [[nodiscard]] LeaderReplies& replies() noexcept { return replies_; }

 private:
  // Takes every link of the follower down and closes its carriers.
  void end_session(FollowerCarriers& fc) noexcept;
  // Connects carriers below N that are not up; counts idle ones taken back from the pool.
  void adjust_carriers(FollowerCarriers& fc) noexcept;
  // Releases carrier `c` (at or above N) to the QP manager's pool when no shard uses it.
  void pool_idle(FollowerCarriers& fc, uint32_t k) noexcept;
  // Resizes the completion queues of carriers 0..n-1 to the QP manager's share for N = n.
  void fit_carriers(FollowerCarriers& fc, uint32_t n) noexcept;
  Result<std::unique_ptr<transport::Connection>> connect_carrier(FollowerCarriers& fc,
                                                                 uint32_t k) noexcept;
  void close_carriers(FollowerCarriers& fc) noexcept;
  // With a pre-shared key: the tag slots of `fc`'s carriers (init()).
  Status init_tags(FollowerCarriers& fc);
  // A new connection on `c`: its writes are authenticated with its session key (if keyed).
  static void arm(FollowerCarriers& fc, Carrier& c) noexcept;
  // Why the handshake `fh` of follower `peer` (connection `info`) does not fit this leader;
  // ok when it does.
  Status check_hello(const transport::Endpoint& peer, const transport::PeerInfo& info,
                     const Result<FollowerHello>& fh) const;
  // Starts the link of `s` to a follower in a new session (its carrier 0 is up).
  Status install(Shard& s, Link& l, const FollowerHello& hello);

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  transport::Transport& transport_;
  ChannelMemory& memory_;
  const std::vector<std::unique_ptr<Shard>>& shards_;
  const std::atomic<bool>& closed_;
  const std::unique_ptr<Wal>& wal_;
  SessionHost& host_;
  // One per follower (the Leader declares this object before its shards: the links point
  // to these).
  std::vector<std::unique_ptr<FollowerCarriers>> carriers_;
  LeaderReplies replies_;  // refers to carriers_: declared after it
};

}  // namespace rdmarepl::replication::detail
