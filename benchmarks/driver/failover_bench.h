// rdmarepl-bench --failovers N: failover time of a replica group (examples/replicated_kv,
// failover_run.h). Each round is timed from the fault (--fault) to the first write
// acknowledged after it; the JSON carries failover_ms (p50, p99, max, every sample),
// acknowledged_writes, acknowledged_lost, stale_acknowledged, epoch_conflicts,
// linearizable and verified.
#pragma once

#include "bench_args.h"

namespace rdmarepl::bench {

// Exit status: 0 when verified (nothing acknowledged lost, every store equal), 1 when not,
// 3 when the run failed.
int run_failover_bench(const BenchArgs& args);

// rdmarepl-bench --group-writes N: the write throughput of a replica group (ReplicaNode
// members electing their leader through etcd) against the same processes running a plain
// channel, in interleaved rounds, with etcd's requests per second while the group writes
// and while it idles (etcd is not on the write path: the two should match). Exit status:
// 0, or 3 when a run failed.
int run_group_bench(const BenchArgs& args);

}  // namespace rdmarepl::bench
