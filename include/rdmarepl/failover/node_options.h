// NodeOptions: what a ReplicaNode (replica_node.h) is built from. docs/failover.md explains
// each knob and its trade-offs.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/coordination/coordinator.h"
#include "rdmarepl/coordination/etcd_coordinator.h"
#include "rdmarepl/replication/options.h"

namespace rdmarepl::failover {

// One member of the group: its id (unique in the group) and where its channel listens
// while it follows (the leader connects there).
struct Member {
  std::string id;
  transport::Endpoint endpoint;
};

struct NodeOptions {
  // The group's name: the prefix of its keys in the coordinator (/rdmarepl/<group>/...).
  std::string group;
  // This node's id; it must be one of `members`.
  std::string id;
  // Every member of the group, this node included (static membership). A leader needs
  // (members / 2 + 1) of them, itself counted, to take over.
  std::vector<Member> members;
  // Where this node keeps its write-ahead log (dir/wal) and its history (dir/history.json).
  std::string dir;
  // The coordinator: `coordinator` when set (tests, another engine), else etcd at `etcd`.
  std::shared_ptr<coordination::Coordinator> coordinator;
  coordination::EtcdOptions etcd;
  // The leadership lease: a leader whose lease cannot be renewed for this long loses it and
  // another member takes over. Shorter: faster failover, more keep-alive traffic and more
  // needless failovers when etcd or the machine stalls.
  std::chrono::milliseconds lease_ttl{1000};
  // A leader acknowledges nothing once `lease_margin` of the TTL is left since its last
  // renewal was sent (room for clock rate drift between it and etcd).
  double lease_margin = 0.2;
  // A follower whose leader's session stays down this long suspects the leader (it was
  // killed, or is cut off). When enough followers suspect it that it cannot reach a
  // majority any more (members - majority + 1 of them), they revoke its lease at once
  // instead of waiting up to lease_ttl for etcd to expire it. Only under ack_mode quorum
  // or all, where a leader without a majority acknowledges nothing; 0 disables it.
  // Shorter: faster failover, and needless ones when connections stall this long.
  std::chrono::milliseconds suspect_after{200};
  // How often the node looks at the election and the group's keys.
  std::chrono::milliseconds poll_interval{50};
  // The channel options of every role; role, peers, listen, node_id, leader_epoch and
  // wal_dir are set by the node.
  replication::ChannelOptions channel;
};

Status validate(const NodeOptions& options);

}  // namespace rdmarepl::failover
