// The nodes of one YCSB run as the client side sees them. The leader channel and its store
// are always in this process; the followers (each with a ReadServer) are either in this
// process too (RunOptions::peers empty: loopback, the original mode) or remote processes
// started with --role follower (follower_node.h), reached at RunOptions::peers (replication)
// and RunOptions::read_peers (reads).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/reads/read_client.h"
#include "rdmarepl/reads/read_server.h"
#include "store.h"
#include "workload.h"

namespace rdmarepl::ycsb {

using Channel = replication::ReplicationChannel<Store>;
using Server = reads::ReadServer<Store>;

// Handshake and request timeouts of remote nodes (both ends), far above the library's
// defaults: emulated machines (TCG VMs on a shared host) take seconds for a handshake.
inline constexpr std::chrono::milliseconds kRemoteConnectTimeout{20000};
inline constexpr std::chrono::milliseconds kRemoteRequestTimeout{10000};

// The channel options every node of a run uses (the follower and leader parts are set by
// the caller).
replication::ChannelOptions node_options(const RunOptions& o);

struct Nodes {
  // In-process followers (empty when they are remote). Declared in the order that makes
  // them be destroyed servers first, then channels, then stores.
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<Channel>> followers;
  std::vector<std::unique_ptr<Server>> servers;
  Store leader_store;
  std::unique_ptr<Channel> leader;
  // Where the workload's ReadClients connect.
  reads::ReadClientOptions client_options;
  // Remote followers: one client per follower process, used only to read its CPU (kCpuKey).
  std::vector<std::unique_ptr<reads::ReadClient>> cpu_probes;

  [[nodiscard]] bool remote() const noexcept { return !cpu_probes.empty(); }
  // The follower processes' CPU seconds now, summed (0 when the followers are in this
  // process: process_cpu_seconds() counts them).
  Result<double> remote_cpu_seconds();
  void close() noexcept;
};

// Starts the in-process followers (or connects to the remote ones) and the leader, and
// waits until the leader is connected to every follower.
Result<std::unique_ptr<Nodes>> start_nodes(const RunOptions& o);

}  // namespace rdmarepl::ycsb
