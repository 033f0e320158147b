// Reads served by the followers: each follower role runs a ReadServer over its store (on a
// port the system picks, reported in its "ready" line), and after the run the leader reads
// a sample of the workload's keys back from every follower through a ReadClient and
// compares each answer with its own store (docs/reads.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv_store.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/reads/read_server.h"
#include "rdmarepl/replication/channel.h"
#include "workload.h"

namespace rdmarepl::kvdemo {

using ReadServer = reads::ReadServer<KvStore>;

// Serves `store` (a follower's, which `channel` applies to) on a free port of 127.0.0.1,
// over the channel's transport.
Result<std::unique_ptr<ReadServer>> start_read_server(
    replication::ReplicationChannel<KvStore>& channel, KvStore& store);

struct ReadCheck {
  uint64_t keys = 0;        // keys read, each from every replica
  uint64_t found = 0;       // answers with a value (over all replicas)
  uint64_t mismatches = 0;  // answers that differ from the leader's store
  uint64_t replicas = 0;

  [[nodiscard]] std::string to_wire() const;
  static Result<ReadCheck> from_wire(std::string_view line);
};

// Reads up to `sample` keys of `spec`'s key space from each replica in `endpoints`
// ("host:port,host:port") and compares them with `leader_store`.
Result<ReadCheck> check_reads(const KvStore& leader_store, const WorkloadSpec& spec,
                              std::string_view endpoints, std::string_view transport,
                              const std::string& pre_shared_key, uint64_t sample);

}  // namespace rdmarepl::kvdemo
