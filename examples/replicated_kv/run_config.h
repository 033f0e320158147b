// What one replicated run is made of, shared by the coordinating process and the role
// processes it starts (they receive it back as flags; see to_args()).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "flags.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "workload.h"

namespace rdmarepl::kvdemo {

struct RunConfig {
  replication::TransportKind transport = replication::TransportKind::automatic;
  replication::AckMode ack = replication::AckMode::all;
  // Followers' poller. The leader's writer thread drives its own channel by default
  // (manual: progress() between writes), which saves a thread and the lock handoffs
  // between the writer and a poller on a small machine.
  replication::PollingMode polling = replication::PollingMode::busy;
  replication::PollingMode leader_polling = replication::PollingMode::manual;
  uint32_t followers = 2;
  WorkloadSpec workload;
  uint64_t batch_bytes = 0;   // 0: the channel's default
  uint32_t shards = 0;        // 0: the channel's default
  uint64_t retain_bytes = 0;  // 0: the channel's default
  uint64_t ring_bytes = 0;    // 0: the channel's default (raised to fit 8 batches)
  uint64_t poll_us = 0;       // 0: the channel's default poll_interval
  uint64_t flush_us = 0;      // 0: the channel's default flush_delay
  // Writes the leader keeps outstanding (issued, not yet committed under the ack mode).
  // 0: no limit (open loop: writes go back to back and a write's latency includes waiting
  // behind earlier batches). 1: closed loop, one write at a time; the leader then wait()s
  // for each write, which seals and sends its batch at once, so flush_delay never adds to
  // the latency of a lone record.
  uint64_t outstanding = 0;
  // Write-ahead logs: empty = none. Otherwise each process logs to <wal_dir>/leader or
  // <wal_dir>/follower-<n> (the coordinating process empties them before a run).
  std::string wal_dir;
  replication::Durability durability = replication::Durability::batch;
  // Pre-shared key of every channel: empty = none. Read from `key_file` (a path, passed to
  // the role processes instead of the key, which stays off their command lines).
  std::string key_file;
  std::string pre_shared_key;
  // Every process's store: full (keeps values) or digest-only (see KvStore::Mode).
  bool digest_only_store = false;
  // Reads served by the followers: 0 = none; else every follower runs a ReadServer and,
  // after the run, the leader reads this many keys of the key space back from each one
  // and compares them with its own store (read_check.h). Needs the full store.
  uint64_t read_keys = 0;

  // Demo: SIGKILL one follower when this fraction of the records was written, and restart
  // it when `restart_at` was written (or a second passed). kill_at <= 0: no kill.
  double kill_at = 0;
  double restart_at = 0;

  // Prometheus metrics of every role: 0 = none; else the leader serves /metrics on
  // 127.0.0.1:<metrics_port> and follower i (0-based) on <metrics_port + 1 + i>.
  uint32_t metrics_port = 0;
  // After the run, keep every role process (and its metrics) up this long before stopping
  // them, so that a scraper sees the final values.
  std::chrono::seconds linger{0};

  bool progress = true;
  std::chrono::seconds timeout{300};
};

// The flags a role process is started with (the parts of `config` it needs).
std::vector<std::string> to_args(const RunConfig& config);
// The flags to_args() writes, read back; also used by the programs' own parsing.
Status apply_flags(const Flags& flags, RunConfig& config);
// The checks apply_flags() makes once every flag was read (ranges, and how flags combine).
Status validate(const RunConfig& config);
// Reads the pre-shared key from `path` (trailing newlines dropped) into `c`.
Status read_key_file(const std::string& path, RunConfig& c);
// The flag names apply_flags() knows (for reporting unknown flags).
std::vector<std::string> run_config_flag_names();

replication::ChannelOptions leader_options(const RunConfig& config,
                                           std::vector<transport::Endpoint> peers);
// A retained window per shard that holds every record of the run: a follower restarted with
// an empty store is then caught up entirely from the leader's window.
uint64_t whole_run_retain_bytes(const RunConfig& config);
replication::ChannelOptions follower_options(const RunConfig& config, uint32_t index,
                                             uint16_t port);

// The log directory of the leader (index < 0) or of follower `index` under config.wal_dir.
std::string wal_dir_of(const RunConfig& config, int index);
// Creates config.wal_dir and empties the leader's and every follower's log under it, so that a
// run starts from empty logs (a log with content would be recovered into the stores). Nothing
// to do without a wal_dir. The error says which directory could not be emptied.
Status empty_wal_dirs(const RunConfig& config);

}  // namespace rdmarepl::kvdemo
