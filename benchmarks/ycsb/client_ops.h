// What the client threads of one YCSB run share, and the operations they run (ycsb_run.cc,
// event_loop.cc): a write through the leader, its commit, a read and its verification.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "generators.h"
#include "latency_log.h"
#include "nodes.h"
#include "rdmarepl/reads/read_client.h"
#include "workload.h"

namespace rdmarepl::ycsb {

// What the client threads share.
struct Shared {
  Shared(const RunOptions& opts, Nodes& n)
      : o(opts),
        cluster(n),
        chooser(opts.mix.distribution, opts.record_count),
        capacity(opts.record_count + opts.operation_count),
        versions(std::make_unique<std::atomic<uint64_t>[]>(capacity)) {
    read.reserve(static_cast<size_t>(opts.operation_count * opts.mix.read) + 1024);
  }
  const RunOptions& o;
  Nodes& cluster;
  KeyChooser chooser;
  uint64_t capacity;
  std::unique_ptr<std::atomic<uint64_t>[]> versions;
  std::array<std::mutex, 1024> stripes;
  std::mutex insert_mu;
  std::atomic<uint64_t> inserted{0};
  std::atomic<uint64_t> issued{0};
  LatencyLog read, update, insert, rmw;
  std::atomic<uint64_t> read_fail{0}, update_fail{0}, insert_fail{0}, rmw_fail{0};
  std::atomic<uint64_t> verified{0}, bad{0}, stale{0};
};

// Writes version++ of record `i` through the leader; the key's stripe keeps versions in
// seq order. Returns the ticket (shard 0, seq 0 on failure).
replication::Ticket write(Shared& s, uint64_t i);
// Waits (up to 10 s) until the leader's ack mode is met for `t`.
bool committed(Shared& s, replication::Ticket t);

// A thread's own last write of each record: its ticket and version.
using OwnWrites = std::unordered_map<uint64_t, std::pair<replication::Ticket, uint64_t>>;

// The consistency of a read of record `i`; `own_version`: the thread's last write of it
// (at_least), else 0.
reads::Consistency consistency_for(const Shared& s, uint64_t i, const OwnWrites& mine,
                                   uint64_t& own_version);
// Checks what a read of `key` returned; true when it found a value the leader wrote.
bool check_read(Shared& s, const std::string& key, const Result<reads::ReadResult>& r,
                const reads::Consistency& c, uint64_t own_version);
// A blocking read of record `i`, checked.
bool read(Shared& s, reads::ReadClient& client, uint64_t i, const OwnWrites& mine);
// Writes record `i` through the leader, remembers it as the thread's own, and waits for
// its commit.
bool own_write(Shared& s, OwnWrites& mine, uint64_t i);
// Runs one insert (one at a time: readers choose among records 0..inserted-1, all written)
// and one read-modify-write of record `i`, each timed and counted.
void insert_one(Shared& s, OwnWrites& mine);
void read_modify_write(Shared& s, reads::ReadClient& client, OwnWrites& mine, uint64_t i);

// Runs a client thread until the run's operations are issued: one operation at a time
// (client_thread, ycsb_run.cc) or --inflight at once as an event loop (event_loop.cc).
void client_thread(Shared& s, uint32_t t, reads::ReadClient& client);
void event_loop_thread(Shared& s, uint32_t t, reads::ReadClient& client);

}  // namespace rdmarepl::ycsb
