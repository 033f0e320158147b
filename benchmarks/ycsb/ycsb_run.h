// One YCSB run: a leader channel in this process and followers with a ReadServer each
// (in this process on loopback, or remote follower processes: nodes.h), and client threads
// that share `clients` ReadClients (one by default: concurrent gets are coalesced into
// shared messages). Updates and inserts go through the leader's replicate(); reads go to
// the followers.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "latency_log.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/knobs.h"
#include "workload.h"

namespace rdmarepl::ycsb {

struct OpStats {
  uint64_t operations = 0;
  uint64_t failed = 0;  // errors and (at_least) "behind" answers
  LatencySummary latency;
};

struct RunResult {
  std::map<std::string, OpStats> ops;  // "READ", "UPDATE", "INSERT", "READ-MODIFY-WRITE"
  double seconds = 0;
  double throughput = 0;  // operations per second, every type
  // User + system CPU over the timed window: this process (with in-process followers, every
  // node of the run) plus, with remote followers, each follower process's (read from it
  // before and after the window, nodes.h).
  double cpu_seconds = 0;
  double cpu_seconds_local = 0;
  double cpu_seconds_remote = 0;
  uint32_t processes = 1;      // whose CPU cpu_seconds sums
  tuning::Knobs leader_knobs;  // in force on the leader at the end (moved by --tuning)
  uint64_t verified_reads = 0;
  uint64_t bad_values = 0;   // not a value the leader wrote for that key
  uint64_t stale_reads = 0;  // at_least: older than the client's own last write
  [[nodiscard]] bool verified() const noexcept {
    return bad_values == 0 && stale_reads == 0 && verified_reads > 0;
  }
};

Result<RunResult> run(const RunOptions& options);

}  // namespace rdmarepl::ycsb
