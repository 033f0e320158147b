// A cluster for runs that move knobs while writing: the followers are processes (started
// with the same role arguments as run_cluster()), the leader channel lives in this process
// with a poller thread (so that apply_knobs() moves it live), and a pacer thread writes an
// open-loop workload (offered MB/s, value sizes) that can change at any time. Used by
// --sweep (the tuning dataset) and --phased (benchmarks/tuning/).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "kv_store.h"
#include "rdmarepl/rdmarepl.h"
#include "run_config.h"

namespace rdmarepl::bench {

// What the pacer writes: `offered_mb_s` (10^6 bytes of key + value per second), values of
// uniform size in [value_min, value_max], keys from a keyspace.
struct LiveWorkload {
  double offered_mb_s = 20;
  uint32_t value_min = 1024;
  uint32_t value_max = 1024;
  uint32_t key_size = 16;
  uint64_t keyspace = 100'000;
};

// The command line of the tuning runs (--sweep, --phased, --burst; rdmarepl-bench --help). A zero
// window_ms means the mode's default (200 ms for --sweep, 250 ms for --phased).
struct LiveArgs {
  replication::TransportKind transport = replication::TransportKind::automatic;
  replication::AckMode ack = replication::AckMode::all;
  uint32_t followers = 1;
  std::string wal_dir;  // empty: no logs
  replication::Durability durability = replication::Durability::batch;
  std::vector<std::string> sweep_values = {"64", "1024", "4096", "16384"};
  std::vector<std::array<uint32_t, 2>> sweep_sizes;  // sweep_values parsed: {min, max}
  std::vector<uint64_t> sweep_rates = {2, 8, 32, 128};
  uint64_t sweep_windows = 40;
  uint64_t sweep_repeat = 1;            // windows measured per setting
  uint64_t sweep_max_foreign_cpu = 25;  // % of a CPU other processes may use in a window
  uint64_t window_ms = 0;
  uint64_t seed = 1;
  std::string sweep_out = "sweep.csv";
  uint64_t rate = 20;
  uint64_t phase_windows = 20;
  uint64_t grid_windows = 8;
  uint64_t warmup_windows = 8;
  uint64_t latency_target_us = 20000;
  uint64_t tuner_period_ms = 250;
  std::string model;
  std::string phased_csv = "phased.csv";
  // --burst
  uint64_t burst_cycles = 4;
  uint32_t repeats = 5;
  size_t burst_grid = 0;  // 0: the whole static grid
  std::vector<std::string> burst_workloads = {"1k", "mixed"};
  std::string burst_csv = "burst.csv";
  bool burst_summary = false;  // report from burst_csv instead of running
  // --shift
  uint64_t shift_windows = 160;
  unsigned shift_cpu = 30;  // % of one CPU the follower keeps
  size_t shift_refresh = 32;
  uint64_t shift_block = 20;
  std::string shift_csv = "shift.csv";
};

// One measured window.
struct LiveWindow {
  double t_end_s = 0;  // since the cluster started
  tuning::Observation obs;
  tuning::Knobs knobs;                      // in force during the window
  metrics::Histogram::Snapshot latency_ns;  // commit latency recorded in the window
  uint64_t records = 0, bytes = 0;          // accepted in the window
  // CPUs that processes outside the cluster kept busy in the window (machine-wide user +
  // system time from /proc/stat, less the leader's and the followers' own), e.g. 0.3 = 30%
  // of one CPU; negative when /proc does not say. A window where another process took a
  // CPU measured the machine, not the knobs; the cluster's own threads competing for the
  // CPUs (a busy poller beside the writer) are part of what a setting costs.
  double foreign_cpus = -1;
};

class LiveCluster {
 public:
  using Channel = replication::ReplicationChannel<kvdemo::KvStore>;

  // Starts `config.followers` follower processes (this executable with the role flags of
  // to_args(config)) and the leader channel from `leader`, whose peers are filled in here.
  static Result<std::unique_ptr<LiveCluster>> start(const kvdemo::RunConfig& config,
                                                    replication::ChannelOptions leader);
  ~LiveCluster();

  void set_workload(const LiveWorkload& w);
  Channel& channel() { return *channel_; }
  [[nodiscard]] std::vector<pid_t> follower_pids() const;
  // Sleeps `d`, then returns the window since the previous measure() (or start).
  LiveWindow measure(std::chrono::milliseconds d);
  // Stops the pacer, waits for every acknowledgement and compares every follower's digest
  // with the leader's. Returns whether they matched; errors for a failed wait or role.
  Result<bool> finish(std::chrono::seconds timeout);
  [[nodiscard]] double elapsed_s() const;

 private:
  // CPU seconds so far: the machine's busy time, and the cluster's processes'; -1 when
  // unknown.
  [[nodiscard]] double own_cpu_s() const;
  LiveCluster() = default;
  void pace() noexcept;

  std::vector<kvdemo::ChildProcess> followers_;
  kvdemo::KvStore store_{kvdemo::KvStore::Mode::kDigestOnly};
  std::unique_ptr<Channel> channel_;
  uint64_t t0_ns_ = 0;
  uint64_t last_ns_ = 0;
  replication::MetricsSnapshot last_;

  std::mutex wl_mu_;
  LiveWorkload workload_;
  std::atomic<uint64_t> workload_version_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> write_failures_{0};
  double last_machine_s_ = -1, last_own_s_ = -1;
  std::thread pacer_;
};

// The settings tried for "best static in hindsight" (--phased): batch size x flush delay x
// polling mode around `base`.
std::vector<tuning::Knobs> static_grid(const tuning::Knobs& base);

// The knob bounds of --sweep and of the tuners in --phased, for a leader with `shards`
// shards and `retain_bytes` per shard: what the channel can do, so that the dataset and the
// tuners see the same space.
tuning::KnobBounds live_bounds(uint32_t shards, uint64_t retain_bytes);

// The cluster shape shared by --sweep and --phased: 2 shards, a 16 MiB retained window per
// shard, values up to 16 KiB, followers blocking in their poller, the leader with a
// sleeping poller (its knobs then move it). Flags: --transport, --followers, --ack.
Result<kvdemo::RunConfig> live_config(const LiveArgs& args);
replication::ChannelOptions live_leader_options(const kvdemo::RunConfig& config);

}  // namespace rdmarepl::bench
