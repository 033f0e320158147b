// The compiled control plane of a ReplicaNode (src/failover/node_control.cc): the lease,
// the election, the reports a new leader takes over from, and the role changes. It reaches
// the typed part (the store and its channel) through NodeHost only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rdmarepl/failover/node_options.h"

namespace rdmarepl::failover {

enum class NodeRole : uint8_t { none, leader, follower };
std::string_view to_string(NodeRole r) noexcept;

// Who leads the group, as this node last saw it (epoch 0, empty id: nobody).
struct LeaderInfo {
  uint64_t epoch = 0;
  std::string id;
  transport::Endpoint endpoint;
};

namespace detail {

class NodeHost {
 public:
  virtual ~NodeHost() = default;
  // Opens the channel of a role over dir/wal (the store holds what the log holds).
  virtual Status open_leader(uint64_t epoch) = 0;
  virtual Status open_follower(uint64_t epoch) = 0;
  virtual void close_channel() noexcept = 0;
  // Follower: a leader's session is established now (ChannelMetrics::leader_sessions).
  [[nodiscard]] virtual bool leader_connected() const = 0;
  // The last seq of shard 0 the store holds.
  [[nodiscard]] virtual uint64_t last_seq() const noexcept = 0;
  // Empties the store (Store::clear()); with `keep_log` false the log too (the member
  // rejoins from nothing), else the next open rebuilds the store from the log.
  virtual Status reset_store(bool keep_log) = 0;
};

class NodeControl {
 public:
  using RoleFn = std::function<void(NodeRole, uint64_t epoch, const LeaderInfo& leader)>;
  static Result<std::unique_ptr<NodeControl>> create(const NodeOptions& options, NodeHost& host,
                                                     RoleFn on_role_change);
  ~NodeControl();
  NodeControl(const NodeControl&) = delete;
  NodeControl& operator=(const NodeControl&) = delete;

  // Starts the lease and election threads.
  Status start();
  // Stops them; a leader resigns first (when `resign`) so that another takes over at once.
  void stop(bool resign) noexcept;

  [[nodiscard]] NodeRole role() const noexcept;
  [[nodiscard]] uint64_t epoch() const noexcept;
  [[nodiscard]] LeaderInfo leader() const;
  // True while this node leads `epoch` and its lease is certainly still valid.
  [[nodiscard]] bool may_acknowledge(uint64_t epoch) const noexcept;
  // The error a write on a node that does not lead gets (names the leader).
  [[nodiscard]] Error not_leader_error() const;

 private:
  struct Impl;
  explicit NodeControl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace detail
}  // namespace rdmarepl::failover
