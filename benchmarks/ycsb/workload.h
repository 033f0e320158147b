// The YCSB core workloads this driver runs and the options of one run.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "generators.h"
#include "rdmarepl/reads/consistency.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/kind.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::ycsb {

// Proportions of one core workload (YCSB's workloads/workload[a-f], without scans).
struct Mix {
  char name = 'C';
  double read = 1.0;
  double update = 0;
  double insert = 0;
  double read_modify_write = 0;
  Distribution distribution = Distribution::zipfian;
};

// A: 50/50 read/update; B: 95/5; C: read only; D: 95% reads of the latest, 5% inserts;
// F: 50% reads, 50% read-modify-write. Returns false for another letter.
bool core_workload(char letter, Mix& out);

struct RunOptions {
  Mix mix;
  uint64_t record_count = 10'000;
  uint64_t operation_count = 100'000;
  uint32_t value_bytes = 1024;
  uint32_t threads = 4;
  uint32_t clients = 1;  // ReadClients the threads share (thread t uses client t % clients)
  // Operations in flight per client thread. 1: a blocking get() per operation. More: the
  // thread is an event loop over a ReadClient of its own (get_async + poll), reads in flight
  // at once, updates and inserts one at a time in the loop.
  uint32_t inflight = 1;
  uint32_t keys_per_message = 64;  // ReadClientOptions::max_keys_per_message
  uint64_t target_ops = 0;         // 0: as fast as possible
  uint32_t followers = 2;
  transport::TransportKind transport = transport::TransportKind::tcp;
  reads::Consistency::Kind consistency = reads::Consistency::Kind::any;
  std::chrono::milliseconds at_least_wait{100};
  uint32_t shards = 2;
  uint64_t seed = 1;
  // How every channel's poller waits (busy, sleep: every 20 us, blocking: in the transport).
  replication::PollingMode polling = replication::PollingMode::blocking;
  // The sleep (sleep) or longest wait (blocking) of an idle poller round.
  std::chrono::microseconds poll_interval{20};
  // ChannelOptions::batch_bytes of every node: the leader seals a batch (one write to each
  // follower) when it reaches this size.
  size_t batch_bytes = 64 * 1024;
  // The leader channel's tuner (ChannelOptions::tuning, the default XGBoost tuner). The read
  // path has no tuner: its knobs (ReadClientOptions, ReadServerOptions) stay at defaults.
  bool tuning = false;
  std::string pre_shared_key;  // every node's and every read connection's
  // Remote followers (--role client): their replication listeners and their read servers,
  // in the same order. Empty peers: `followers` followers run in this process.
  std::vector<transport::Endpoint> peers;
  std::vector<transport::Endpoint> read_peers;
};

}  // namespace rdmarepl::ycsb
