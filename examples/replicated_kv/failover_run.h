// A failover run: a replica group of ReplicaNode members (failover_member.h) as separate
// processes on loopback, electing their leader through etcd (started here when no endpoint
// is given). The coordinating process is the group's client: it writes to whichever member
// leads, injects a fault after each stretch of acknowledged writes (SIGKILL or SIGSTOP of
// the leader, SIGKILL of a follower), follows the new leader, brings the member back with
// its old log, and at the end counts the acknowledged writes that no member holds. Every
// 4th write also overwrites one of 8 register keys, which the client reads back from the
// leader (a read confirmed by a replicated write after it), and the recorded history is
// checked for linearizability (linearizability.h). Used by the demo and by
// rdmarepl-bench --failovers N.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fault.h"
#include "kv_store.h"
#include "linearizability.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/options.h"

namespace rdmarepl::kvdemo {

struct FailoverConfig {
  uint32_t members = 3;
  // Fault rounds in the run; after each, the member is back (restarted with its old log, or
  // resumed) and follows before the next one.
  uint32_t failovers = 1;
  Fault fault = Fault::kill_leader;
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
  // etcd client URLs (comma-separated); empty: the run starts /usr/bin/etcd, `etcd_members`
  // processes with temporary data directories. With 3, the member every node asks first is
  // killed (SIGKILL) after half of the rounds.
  std::string etcd;
  uint32_t etcd_members = 1;
  // Where the members keep their logs (one directory each); empty: a temporary directory,
  // removed after the run.
  std::string dir;
  // Where to write the client's history as Porcupine events (empty: nowhere).
  std::string history;
  bool progress = true;
  std::chrono::seconds timeout{600};
};

struct FailoverResult {
  uint32_t members = 0;
  uint64_t acknowledged = 0;  // distinct writes acknowledged to the client
  // Acknowledged writes missing or different on the final leader (the guarantee: 0).
  uint64_t lost = 0;
  // The fault (kill or stop) -> the first write acknowledged after it, per round.
  std::vector<double> failover_ms;
  // Writes a deposed leader (stopped, or cut off from etcd) acknowledged once another member
  // led (the guarantee: 0).
  uint64_t stale_acknowledged = 0;
  // Epochs in which two members acknowledged writes (the guarantee: 0).
  uint64_t epoch_conflicts = 0;
  uint64_t reads = 0;  // confirmed register reads in the history
  bool etcd_member_killed = false;
  LinearizabilityResult linearizability;
  double seconds = 0;                                   // the whole run, failovers included
  std::vector<std::pair<std::string, Digest>> digests;  // per member, once converged
  bool converged = false;                               // every member's digest equal at the end
  // converged, linearizable, and nothing lost, stale or in conflict
  bool verified = false;
};

Result<FailoverResult> run_failovers(const FailoverConfig& config);

// The key and value of write `index` of a failover run (each key is written once; a write
// retried after a failover writes the same value again).
std::string failover_key(uint64_t index);
std::string failover_value(uint64_t index, uint32_t size);
// The register key write `index` also sets (to its index in decimal), if any.
bool failover_register(uint64_t index, std::string& key);
inline constexpr uint32_t kFailoverRegisters = 8;
std::string failover_register_key(uint32_t r);

}  // namespace rdmarepl::kvdemo
