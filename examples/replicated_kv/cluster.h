// The coordinating process of a replicated run: starts the followers and the leader as
// separate processes on loopback, relays progress, optionally kills and restarts a follower
// part way, then collects and compares every store's digest.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kv_store.h"
#include "latency.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "read_check.h"
#include "run_config.h"

namespace rdmarepl::kvdemo {

struct NodeDigest {
  std::string node;  // "leader", "follower-1", ...
  Digest digest;
};

// The registrations of one node's channel (MetricsSnapshot::memory_registrations): right
// after create() and at the end of the run. They are equal when nothing registered on the
// data path.
struct NodeRegistrations {
  std::string node;
  uint64_t at_create = 0;
  uint64_t at_end = 0;
};

struct RunResult {
  std::string transport;
  uint64_t records = 0;
  uint64_t payload_bytes = 0;  // key + value bytes written by the leader
  double seconds = 0;          // first write to every follower acknowledging the last
  double ops_per_sec = 0;
  double mb_per_sec = 0;   // payload MB (10^6 bytes) per second
  LatencySummary latency;  // replicate() to committed under the ack mode
  double cpu_seconds = 0;  // user + system of every process of the run
  std::vector<std::pair<std::string, double>> cpu_by_process;  // the same, per process
  replication::MetricsSnapshot leader_metrics;  // the scalar metrics at the leader's end
  bool follower_killed = false;
  std::vector<NodeDigest> digests;               // the leader first
  std::vector<NodeRegistrations> registrations;  // the leader first
  ReadCheck reads;  // with RunConfig::read_keys: keys read back from followers
  // Every follower's digest equals the leader's (and every key read back matched).
  bool verified = false;
};

// Runs the cluster. Errors (a role failed, a timeout) come back with the role's message.
// A digest mismatch is not an error: the result says verified=false.
Result<RunResult> run_cluster(const RunConfig& config);

}  // namespace rdmarepl::kvdemo
