// rdmarepl-ycsb --role follower: one follower in a process of its own (for runs across
// machines or VMs). It listens for the leader's replication at (listen, port) and serves
// reads of its store at (listen, read_port), prints
//   READY replication=HOST:PORT reads=HOST:PORT transport=NAME
// once both listen, and runs until SIGTERM or SIGINT; then it prints
//   STOPPED cpu_seconds=S applied=N read_requests=N read_keys=N bad_requests=N
// (S: user + system CPU of the whole process since it started) and exits 0.
#pragma once

#include <cstdint>
#include <string>

#include "workload.h"

namespace rdmarepl::ycsb {

struct FollowerRole {
  std::string listen = "127.0.0.1";
  uint16_t port = 0;       // replication; 0 picks a free port (printed in READY)
  uint16_t read_port = 0;  // reads; 0 picks a free port
};

// Returns the process exit status.
int run_follower(const RunOptions& o, const FollowerRole& role);

}  // namespace rdmarepl::ycsb
