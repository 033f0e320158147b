// rdmarepl-bench's command line (CLI11): the end-to-end run (a RunConfig plus the
// baselines to compare with) and the tuning runs (--sweep, --phased: LiveArgs).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "fault.h"
#include "live_cluster.h"
#include "rdmarepl/core/result.h"
#include "run_config.h"

namespace rdmarepl::bench {

struct BenchArgs {
  kvdemo::RunConfig config;  // the end-to-end run, with the bench's defaults
  std::string value_size = "1024";
  std::string store = "digest";
  std::vector<std::string> compare;  // redis, tcp-stream
  uint64_t redis_pipeline = 16;
  std::string redis_script;
  uint64_t timeout_s = 600;
  std::string json;
  bool quiet = false;
  bool sweep = false;
  bool phased = false;
  bool burst = false;
  bool shift = false;
  // --failovers N: a failover group instead of the replicated run (failover_bench.h).
  uint32_t failovers = 0;
  uint32_t members = 3;
  uint64_t failover_writes = 2000;
  uint64_t lease_ms = 1000;
  uint64_t suspect_ms = 200;
  kvdemo::Fault fault = kvdemo::Fault::kill_leader;
  std::string history;  // Porcupine events of the client's history
  // --group-writes N: a group's write throughput against a plain channel (failover_bench.h).
  uint64_t group_writes = 0;
  uint32_t group_rounds = 3;
  std::string etcd;
  uint32_t etcd_members = 1;
  LiveArgs live;
};

// Declares every flag of `args` on `app`, with the defaults and help of rdmarepl-bench.
void add_bench_options(CLI::App& app, BenchArgs& args);

// After parsing: the value range, the store, the limits, and which flags apply to which
// mode (--sweep / --phased take only the tuning flags). Errc::invalid_argument says why.
Status finish_bench_args(const CLI::App& app, BenchArgs& args);

}  // namespace rdmarepl::bench
