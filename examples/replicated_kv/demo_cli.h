// The demo's command line (CLI11): every flag of `replicated_kv --help`, read into a
// RunConfig and checked (run_config.h, validate()).
#pragma once

#include <optional>
#include <string>

#include "run_config.h"

namespace rdmarepl::kvdemo {

struct DemoCommand {
  RunConfig config;
  // The failover part after the replicated run: a group of 3 ReplicaNode members through
  // etcd, its leader killed this many times (0: no failover part).
  uint32_t failovers = 1;
  std::string etcd;              // a running etcd's client URL; empty: the demo starts one
  std::optional<int> exit_code;  // set: --help was printed (0) or the line is wrong (2)
};

// Parses argv; on a usage error prints what is wrong (and "try --help") to stderr.
DemoCommand parse_demo_command(int argc, char** argv);

}  // namespace rdmarepl::kvdemo
