// The follower's control plane towards its leader: the listener and the handshake threads
// that accept leader connections and install them as carriers of a session, subject to the
// leader's identity and epoch (docs/replication.md, "Handshakes" and "Leader identity and
// epoch"); the doctor's probes, answered on a handshake thread and never installed
// (probe.h); and the session itself (its carriers, ended by drop()). The Follower owns one
// FollowerSessions and polls the carriers under mu(); it is reached back through
// AcceptHost only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "channel_memory.h"
#include "follower_shard.h"
#include "follower_wal.h"
#include "hello.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

// Threads that run handshakes on a follower (each accepts a peer that has spoken, runs its
// handshake and installs it): a peer that stalls in its handshake holds one of them.
inline constexpr uint32_t kHandshakeThreads = 4;

// What the handshake threads need of the follower.
class AcceptHost {
 public:
  // False once the follower is closing: the handshake threads return.
  [[nodiscard]] virtual bool accepting() const noexcept = 0;
  // First handshake thread, each round: true (once) when a shipped checkpoint waits.
  virtual bool checkpoint_waiting() noexcept = 0;
  // Installs the shipped checkpoints that wait (the install lock held).
  virtual void install_shipped() noexcept = 0;

 protected:
  ~AcceptHost() = default;
};

class FollowerSessions {
 public:
  using Carriers = std::vector<std::unique_ptr<FollowerCarrier>>;

  // Everything passed must outlive this object; `shards` may be filled after construction.
  // `endpoint` names the follower in messages.
  FollowerSessions(const ChannelOptions& options, ChannelMetrics& metrics, ChannelMemory& memory,
                   const FollowerShards& shards, FollowerLog& log,
                   const transport::Endpoint& endpoint, AcceptHost& host)
      : options_(options),
        metrics_(metrics),
        memory_(memory),
        shards_(shards),
        log_(log),
        endpoint_(endpoint),
        host_(host),
        tag_bytes_(options.pre_shared_key.empty() ? 0 : kMacTagBytes) {}
  FollowerSessions(const FollowerSessions&) = delete;
  FollowerSessions& operator=(const FollowerSessions&) = delete;

  // Listens on ChannelOptions::listen; at create(), after the log's leader epoch was loaded
  // (leaders below it are refused).
  Result<transport::Endpoint> listen(transport::Transport& transport);
  // Runs the handshakes: kHandshakeThreads threads (one when the listener cannot accept
  // concurrently), each accepting and installing connections; the first also installs
  // shipped checkpoints. Returns once the host stops accepting.
  void accept_loop() noexcept;
  // close(), after the handshake threads returned: refuses new connections at once and
  // closes every carrier.
  void close() noexcept;

  // The connections of the current session (docs/replication.md, "Carriers"): any of them
  // carries any shard. mu() is taken before a shard lock, never after one; the carriers and
  // in_session() are read under it.
  [[nodiscard]] std::mutex& mu() noexcept { return carriers_mu_; }
  [[nodiscard]] const Carriers& carriers() const noexcept { return carriers_; }
  [[nodiscard]] bool in_session() const noexcept { return in_session_; }
  // Bytes of the tag after every write of the leader (0 without a pre-shared key).
  [[nodiscard]] uint32_t tag_bytes() const noexcept { return tag_bytes_; }
  // Set by a checkpoint install: the session ends once the reply to it was posted, and no
  // batch of it is applied before then. Cleared when a session starts.
  [[nodiscard]] std::atomic<bool>& end_session() noexcept { return end_session_; }
  // Ends the session: every carrier closes (the leader reconnects with a new handshake).
  // Caller holds mu() (and may hold one shard lock).
  void drop(std::string_view why, bool protocol_error = false) noexcept;

 private:
  void accept_worker(bool first) noexcept;
  [[nodiscard]] transport::ConnectionOptions accept_options();
  // The resume points and buffer generations a handshake accepted now tells the leader.
  void refresh(FollowerHello& hello) noexcept;
  // ConnectionOptions::check_peer: refuses, with the reason, a leader whose carrier 0
  // leader_refusal() would refuse; counts it in leaders_refused.
  Status check_leader(std::string_view node, std::string_view address, std::string_view app_data);
  // Why leader `node` (`who` in messages) with `epoch` may not start a session now; empty
  // when it may. Caller holds mu().
  [[nodiscard]] std::string leader_refusal(const std::string& node, uint64_t epoch,
                                           const std::string& who) const;
  // A probe (probe.h): answered and closed on this handshake thread; counted in
  // probes_answered.
  void answer_probe(std::unique_ptr<transport::Connection> conn) noexcept;
  // `told`: the handshake sent (per-shard resume points and buffer generations).
  void install(std::unique_ptr<transport::Connection> conn, const FollowerHello& told) noexcept;
  // Why the leader's hello `h` (from `who` on a connection with `info`) does not fit this
  // follower; ok when it does.
  [[nodiscard]] Status check_hello(const transport::PeerInfo& info, const Result<LeaderHello>& h,
                                   const std::string& who) const;
  // Carrier `h.carrier` > 0: joins the current session, or is closed. Caller holds mu().
  void join_session(std::unique_ptr<FollowerCarrier> c, const LeaderHello& h,
                    const std::string& who) noexcept;
  // Carrier 0 from leader `who`: starts a new session unless it is refused, its epoch cannot
  // be kept or a resume point moved since `told`; otherwise it is closed. Caller holds mu().
  void start_session(std::unique_ptr<FollowerCarrier> c, const LeaderHello& h,
                     const FollowerHello& told, const std::string& who) noexcept;
  // Makes `conn` (carrier 0 of `session` from leader `who`) the start of a new session
  // under every shard's lock; returns why not (a resume point moved since `told`), empty
  // when it did (then `conn` was moved into carriers_). Caller holds mu().
  std::string begin_session(std::unique_ptr<FollowerCarrier>& conn, const FollowerHello& told,
                            uint32_t session, const std::string& who) noexcept;

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  ChannelMemory& memory_;
  const FollowerShards& shards_;
  FollowerLog& log_;
  const transport::Endpoint& endpoint_;
  AcceptHost& host_;
  const uint32_t tag_bytes_;
  std::unique_ptr<transport::Listener> listener_;
  // carriers_mu_ is taken before a shard lock, never after one.
  std::mutex carriers_mu_;
  Carriers carriers_;
  uint32_t session_ = 0;
  bool in_session_ = false;
  std::string session_leader_;  // node id (identity) of the session's leader
  uint64_t session_epoch_ = 0;
  // The highest leader epoch this follower accepted, and from whom (for messages).
  uint64_t highest_epoch_ = 0;
  std::string highest_leader_;
  // Serialises install() and the installs of shipped checkpoints across the handshake
  // threads.
  std::mutex install_mu_;
  std::atomic<bool> end_session_{false};
};

}  // namespace rdmarepl::replication::detail
