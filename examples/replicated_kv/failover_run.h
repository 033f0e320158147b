// A failover run: a replica group of ReplicaNode members (failover_member.h) as separate
// processes on loopback, electing their leader through etcd (started here when no endpoint
// is given). The coordinating process is the group's client: it writes to whichever member
// leads, SIGKILLs the leader after each stretch of acknowledged writes, follows the new
// leader, restarts the killed member with its old log, and at the end counts the
// acknowledged writes that no member holds. Used by the demo (--kill-leader) and by
// rdmarepl-bench --failovers N.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kv_store.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/options.h"

namespace rdmarepl::kvdemo {

struct FailoverConfig {
  uint32_t members = 3;
  // Leader kills (SIGKILL) in the run; after each, the killed member is restarted with its
  // old log and rejoins as a follower before the next one.
  uint32_t failovers = 1;
  // Writes each leadership acknowledges before its leader is killed (and after the last).
  uint64_t writes_per_leader = 2000;
  uint32_t value_size = 1024;
  // Writes per request to the leader; the member issues them back to back, then waits for
  // each (ack mode below).
  uint32_t chunk = 32;
  replication::AckMode ack = replication::AckMode::quorum;
  std::chrono::milliseconds lease_ttl{1000};
  // NodeOptions::suspect_after of every member (0: wait for the lease to expire).
  std::chrono::milliseconds suspect_after{200};
  // etcd client URL; empty: the run starts /usr/bin/etcd with a temporary data directory.
  std::string etcd;
  // Where the members keep their logs (one directory each); empty: a temporary directory,
  // removed after the run.
  std::string dir;
  bool progress = true;
  std::chrono::seconds timeout{600};
};

struct FailoverResult {
  uint32_t members = 0;
  uint64_t acknowledged = 0;  // distinct writes acknowledged to the client
  // Acknowledged writes missing or different on the final leader (the guarantee: 0).
  uint64_t lost = 0;
  // Kill of the leader -> first write acknowledged by the new one, per failover.
  std::vector<double> failover_ms;
  double seconds = 0;                                   // the whole run, failovers included
  std::vector<std::pair<std::string, Digest>> digests;  // per member, once converged
  bool converged = false;                               // every member's digest equal at the end
  bool verified = false;                                // converged and lost == 0
};

Result<FailoverResult> run_failovers(const FailoverConfig& config);

// The key and value of write `index` of a failover run (each key is written once; a write
// retried after a failover writes the same value again).
std::string failover_key(uint64_t index);
std::string failover_value(uint64_t index, uint32_t size);

}  // namespace rdmarepl::kvdemo
