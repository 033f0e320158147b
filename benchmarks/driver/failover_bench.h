// rdmarepl-bench --failovers N: failover time of a replica group (examples/replicated_kv,
// failover_run.h). Each failover is timed from the SIGKILL of the leader to the first write
// the new leader acknowledged; the JSON carries failover_ms (p50, p99, max, every sample),
// acknowledged_writes, acknowledged_lost and verified.
#pragma once

#include "bench_args.h"

namespace rdmarepl::bench {

// Exit status: 0 when verified (nothing acknowledged lost, every store equal), 1 when not,
// 3 when the run failed.
int run_failover_bench(const BenchArgs& args);

}  // namespace rdmarepl::bench
