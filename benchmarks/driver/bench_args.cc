#include "bench_args.h"

#include <fmt/format.h>

#include <charconv>

#include "count_option.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::bench {
namespace {

// The flags that --sweep, --phased and --burst accept (everything else is for the end-to-end
// run).
const std::vector<std::string> kLiveFlags = {"--sweep",
                                             "--phased",
                                             "--burst",
                                             "--burst-cycles",
                                             "--burst-grid",
                                             "--burst-workloads",
                                             "--burst-csv",
                                             "--burst-summary",
                                             "--shift",
                                             "--shift-windows",
                                             "--shift-cpu",
                                             "--shift-refresh",
                                             "--shift-block",
                                             "--shift-csv",
                                             "--repeats",
                                             "--sweep-values",
                                             "--sweep-rates",
                                             "--sweep-windows",
                                             "--sweep-repeat",
                                             "--sweep-max-foreign-cpu",
                                             "--window-ms",
                                             "--sweep-out",
                                             "--seed",
                                             "--rate",
                                             "--warmup-windows",
                                             "--phase-windows",
                                             "--grid-windows",
                                             "--latency-target-us",
                                             "--tuner-period-ms",
                                             "--model",
                                             "--phased-csv",
                                             "--followers",
                                             "--transport",
                                             "--ack",
                                             "--wal-dir",
                                             "--durability",
                                             "--quiet"};

// An option whose text is one of the enum's to_string() spellings.
template <typename E>
CLI::Option* add_enum(CLI::App& app, const std::string& name, E& out, const std::string& help,
                      const std::string& group) {
  std::vector<std::string> names;
  for (E e : enum_values(E{})) names.emplace_back(to_string(e));
  return app
      .add_option_function<std::string>(
          name, [&out](const std::string& s) { out = *from_string<E>(s); }, help)
      ->check(CLI::IsMember(names))
      ->group(group);
}

void add_run_options(CLI::App& app, BenchArgs& a) {
  const std::string g = "End-to-end run";
  auto& c = a.config;
  auto& w = c.workload;
  add_enum(app, "--transport", c.transport, "auto | tcp | verbs (default auto)", g);
  app.add_option("--followers", c.followers, "followers (default 2; 1 with --sweep/--phased)")
      ->group(g);
  app.add_option("--value-size", a.value_size,
                 "value bytes (default 1024); A-B for uniform sizes in [A, B]")
      ->group(g);
  app.add_option("--key-size", w.key_size, "key bytes (default 16)")->group(g);
  app.add_option("--records", w.records, "records (default 200000; k/m suffixes)")
      ->transform(count_suffix())
      ->group(g);
  app.add_option("--keyspace", w.keyspace,
                 "distinct keys (default: records; keys repeat, as with redis-benchmark -r)")
      ->transform(count_suffix())
      ->group(g);
  add_enum(app, "--ack", c.ack, "none | one | all | quorum (default all)", g);
  app.add_option("--batch-bytes", c.batch_bytes,
                 "batch size (default 256 KiB; the channel's own default is 64 KiB)")
      ->transform(count_suffix())
      ->group(g);
  app.add_option("--shards", c.shards, "shards, i.e. connections per follower (default 1)")
      ->group(g);
  add_enum(app, "--polling", c.polling,
           "followers' poller: busy | sleep | blocking (default blocking)", g);
  add_enum(app, "--leader-polling", c.leader_polling,
           "manual | busy | sleep | blocking (default manual: the writer drives it)", g);
  app.add_option("--retain-bytes", c.retain_bytes,
                 "leader's retained window per shard (default 8MiB)")
      ->transform(count_suffix())
      ->group(g);
  app.add_option("--ring-bytes", c.ring_bytes,
                 "followers' receive ring per shard (default: the channel's, raised to hold 8 "
                 "batches)")
      ->transform(count_suffix())
      ->group(g);
  app.add_option("--store", a.store,
                 "digest (default: every process keeps a hash per key, enough for the digest "
                 "comparison) | map (keep every value, as the demo does)")
      ->check(CLI::IsMember({"digest", "map"}))
      ->group(g);
  app.add_option("--poll-us", c.poll_us,
                 "poll interval / longest block in microseconds (default: the channel's)")
      ->group(g);
  app.add_option("--flush-us", c.flush_us,
                 "seal a batch this long after its first record (default 1000; the channel's "
                 "own default is 200)")
      ->group(g);
  app.add_option("--outstanding", c.outstanding,
                 "writes in flight at most (default 0: no limit, open loop). 1 is a closed loop: "
                 "each write waits for its commit before the next is issued, and the wait sends "
                 "its batch at once (flush delay not added)")
      ->group(g);
  app.add_option("--erase-percent", w.erase_percent,
                 "share of the operations that erase a key, 0..50 (default 0)")
      ->check(CLI::Range(0, 50))
      ->group(g);
  app.add_option("--seed", w.seed, "workload seed (default 42; 1 for --sweep)")->group(g);
  app.add_option("--wal-dir", c.wal_dir,
                 "write-ahead logs: the leader logs to D/leader, follower n to D/follower-n "
                 "(emptied before the run); default: no log")
      ->group(g);
  add_enum(app, "--durability", c.durability,
           "none | batch | interval (default batch; with --wal-dir)", g);
  app.add_option("--key-file", c.key_file,
                 "pre-shared key of every channel, read from this file: the handshake is "
                 "authenticated and every batch carries a MAC (default: no key)")
      ->group(g);
}

void add_output_options(CLI::App& app, BenchArgs& a) {
  const std::string g = "Output and baselines";
  app.add_option("--json", a.json, "write the result as JSON")->group(g);
  app.add_option("--compare", a.compare,
                 "redis | tcp-stream; may be given twice. Runs the baseline in the same run and "
                 "prints our number as a multiple of it")
      ->check(CLI::IsMember({"redis", "tcp-stream"}))
      ->group(g);
  app.add_option("--redis-pipeline", a.redis_pipeline,
                 "redis-benchmark pipeline depth (default 16; see redis_replication.sh)")
      ->group(g);
  app.add_option("--redis-script", a.redis_script,
                 "path of redis_replication.sh (default: the source tree's)")
      ->group(g);
  app.add_option("--timeout", a.timeout_s, "give up after S seconds (default 600)")->group(g);
  app.add_flag("--quiet", a.quiet, "no progress output")->group(g);
}

// --shift (benchmarks/tuning/shift.cc); it shares --rate, --phase-windows (the windows before
// the move), --window-ms, --warmup-windows, --latency-target-us, --repeats and --model.
void add_shift_options(CLI::App& app, BenchArgs& a) {
  const std::string g =
      "Online learning after the environment moves (--shift; docs/benchmarks.md \"Tuning: "
      "online learning\")";
  auto& l = a.live;
  app.add_flag("--shift", a.shift,
               "the XGBoost tuner with and without online learning, before and after the "
               "follower is limited to --shift-cpu % of a CPU (a cgroup quota; needs root)")
      ->group(g);
  app.add_option("--shift-windows", l.shift_windows,
                 "windows after the follower is limited (default 160)")
      ->group(g);
  app.add_option("--shift-cpu", l.shift_cpu, "% of one CPU the follower keeps (default 30)")
      ->check(CLI::Range(1u, 100u))
      ->group(g);
  app.add_option("--shift-refresh", l.shift_refresh,
                 "online: refresh the model every N live samples (default 32)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  app.add_option("--shift-block", l.shift_block, "windows per row of the table (default 20)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  app.add_option("--shift-csv", l.shift_csv, "per-window results (default shift.csv)")->group(g);
}

// --failovers (failover_bench.h): shares --ack, --value-size, --json, --quiet, --timeout.
void add_failover_options(CLI::App& app, BenchArgs& a) {
  const std::string g = "Failover (--failovers; docs/benchmarks.md \"Failover\")";
  app.add_option("--failovers", a.failovers,
                 "a group of --members ReplicaNode processes electing their leader through "
                 "etcd: inject --fault N times under writes and time each round (fault to "
                 "the first acknowledged write after it); needs --ack quorum or all")
      ->group(g);
  app.add_option("--members", a.members, "members of the failover group (default 3)")
      ->check(CLI::Range(3u, 7u))
      ->group(g);
  app.add_option("--failover-writes", a.failover_writes,
                 "writes each leadership acknowledges before its leader is killed (default "
                 "2000)")
      ->check(CLI::PositiveNumber)
      ->group(g);
  app.add_option("--lease-ms", a.lease_ms, "the leadership lease TTL (default 1000)")->group(g);
  app.add_option("--suspect-ms", a.suspect_ms,
                 "followers without their leader's session this long revoke its lease "
                 "(NodeOptions::suspect_after; default 200, 0: wait for the lease to expire)")
      ->group(g);
  app.add_option("--group-writes", a.group_writes,
                 "instead of failovers: N timed writes by a group of --members (through "
                 "etcd) and by the same processes as a plain channel, in interleaved rounds; "
                 "needs --ack quorum or all")
      ->group(g);
  app.add_option("--group-rounds", a.group_rounds, "rounds of --group-writes (default 3)")
      ->check(CLI::Range(1u, 20u))
      ->group(g);
  add_enum(app, "--fault", a.fault,
           "what each round does: kill-leader (SIGKILL, default) | stop-leader (SIGSTOP "
           "past the lease, then SIGCONT) | kill-follower | cut-etcd (the leader's path "
           "to etcd blackholed until another member leads)",
           g);
  app.add_option("--history", a.history,
                 "write the client's history of register operations to FILE as Porcupine "
                 "events (JSON)")
      ->group(g);
  app.add_option("--etcd-members", a.etcd_members,
                 "etcd processes the run starts (1 or 3; with 3 the one every member asks "
                 "first is killed halfway through the rounds)")
      ->check(CLI::IsMember({1u, 3u}))
      ->group(g);
  app.add_option("--etcd", a.etcd,
                 "etcd client URL (default: start /usr/bin/etcd with a temporary data "
                 "directory)")
      ->group(g);
}

// --burst (benchmarks/tuning/burst.cc); it shares --rate, --phase-windows, --window-ms,
// --warmup-windows, --latency-target-us (the SLO), --tuner-period-ms and --model.
void add_burst_options(CLI::App& app, BenchArgs& a) {
  const std::string g =
      "Burst experiment (--burst; docs/benchmarks.md \"Tuning: burst experiment\")";
  auto& l = a.live;
  app.add_flag("--burst", a.burst,
               "the burst experiment: base load L and bursts of 1.5 L in cycles, under "
               "static-default, heuristic, xgboost, lstm and every fixed grid setting, with "
               "best-fixed and the per-phase oracle chosen in hindsight")
      ->group(g);
  app.add_option("--burst-cycles", l.burst_cycles, "base + burst cycles (default 4)")->group(g);
  app.add_option("--repeats", l.repeats, "repeats of every strategy, interleaved (default 5)")
      ->group(g);
  app.add_option("--burst-grid", l.burst_grid,
                 "use only the first N fixed grid settings (default 0: all 12)")
      ->group(g);
  app.add_option("--burst-workloads", l.burst_workloads,
                 "value sizes: 1k (1 KiB), mixed (64 B .. 16 KiB); comma separated "
                 "(default 1k,mixed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"1k", "mixed"}))
      ->group(g);
  app.add_option("--burst-csv", l.burst_csv, "per-window results (default burst.csv)")->group(g);
  app.add_flag("--burst-summary", l.burst_summary,
               "do not run: print the report of the run whose --burst-csv is given (needs the "
               "run's --rate, --burst-cycles, --phase-windows, --window-ms and "
               "--latency-target-us)")
      ->group(g);
}

void add_live_options(CLI::App& app, BenchArgs& a) {
  const std::string g =
      "Tuning runs (followers are processes, the leader runs in this process with a poller "
      "thread and its knobs move live; docs/tuning.md and docs/benchmarks.md \"Tuning\"); "
      "--followers N, --transport T, --ack M, --wal-dir D and --durability M apply to them too "
      "(default 1 follower, no log)";
  auto& l = a.live;
  app.add_flag("--sweep", a.sweep,
               "write the tuning dataset (CSV): for each value size x offered rate, "
               "--sweep-windows settings of --sweep-repeat windows while a random walk moves the "
               "knobs")
      ->group(g);
  app.add_option("--sweep-values", l.sweep_values,
                 "value sizes, comma separated; each N or MIN-MAX (uniform), e.g. 64-16384 "
                 "(default 64,1024,4096,16384)")
      ->delimiter(',')
      ->group(g);
  app.add_option("--sweep-rates", l.sweep_rates,
                 "offered MB/s, comma separated (default 2,8,32,128)")
      ->delimiter(',')
      ->transform(count_suffix())
      ->group(g);
  app.add_option("--sweep-windows", l.sweep_windows, "settings per cell (default 40)")->group(g);
  app.add_option("--sweep-repeat", l.sweep_repeat,
                 "windows measured per setting; a row's outcome is their mean throughput and "
                 "the p99 of all their latencies (default 1)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{20}))
      ->group(g);
  app.add_option("--sweep-max-foreign-cpu", l.sweep_max_foreign_cpu,
                 "drop a row when, in one of its windows, processes outside the cluster kept "
                 "more than this % of a CPU busy; 100 is one whole CPU, N x 100 is N CPUs "
                 "(default 25)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000}))
      ->group(g);
  app.add_option("--window-ms", l.window_ms,
                 "window length (default 200 for --sweep, 250 for --phased)")
      ->group(g);
  app.add_option("--sweep-out", l.sweep_out, "the dataset (default sweep.csv)")->group(g);
  app.add_flag("--phased", a.phased,
               "the phased evaluation (benchmarks/tuning/): static-default, heuristic, xgboost, "
               "lstm and best-static over four phases")
      ->group(g);
  app.add_option("--rate", l.rate, "offered MB/s of phase 1 (default 20); later phases offer 1.5 L")
      ->group(g);
  app.add_option("--phase-windows", l.phase_windows, "windows per phase (default 20)")->group(g);
  app.add_option("--grid-windows", l.grid_windows,
                 "windows per best-static grid setting (default 8)")
      ->group(g);
  app.add_option("--warmup-windows", l.warmup_windows,
                 "unmeasured windows at phase 1's load first (default 8)")
      ->group(g);
  app.add_option("--latency-target-us", l.latency_target_us,
                 "the tuners' p99 target (default 20000)")
      ->group(g);
  app.add_option("--tuner-period-ms", l.tuner_period_ms, "the tuners' period (default 250)")
      ->group(g);
  app.add_option("--model", l.model, "XGBoost model (default: the shipped one)")->group(g);
  app.add_option("--phased-csv", l.phased_csv,
                 "per-window results for the plot (default phased.csv)")
      ->group(g);
  add_burst_options(app, a);
  add_shift_options(app, a);
}

// "N" or "MIN-MAX" of counts.
Status parse_value_size(const std::string& flag, const std::string& text, uint32_t& lo,
                        uint32_t& hi) {
  const auto dash = text.find('-');
  std::string a = text.substr(0, dash), b = dash == std::string::npos ? a : text.substr(dash + 1);
  std::string why = expand_count(a);
  if (why.empty()) why = expand_count(b);
  if (!why.empty()) return Error(Errc::invalid_argument, flag + ": " + why);
  const uint64_t min = std::stoull(a), max = std::stoull(b);
  if (min > max)
    return Error(Errc::invalid_argument,
                 flag + ": range '" + text + "' has MIN > MAX; write it as MIN-MAX, e.g. 16-1024");
  if (max > (64u << 20))
    return Error(Errc::invalid_argument,
                 flag + " " + text + ": values up to 64 MiB are supported here");
  lo = static_cast<uint32_t>(min);
  hi = static_cast<uint32_t>(max);
  return ok_status();
}

Status check_run(const kvdemo::RunConfig& c) {
  if (c.followers < 1 || c.followers > replication::kMaxFollowers)
    return Error(Errc::invalid_argument, fmt::format("--followers {} is out of range; use 1..{}",
                                                     c.followers, replication::kMaxFollowers));
  if (c.workload.key_size < 8 || c.workload.key_size > 1024)
    return Error(
        Errc::invalid_argument,
        fmt::format("--key-size {} is out of range; use 8..1024 bytes", c.workload.key_size));
  if (c.workload.records == 0) return Error(Errc::invalid_argument, "--records must be at least 1");
  return ok_status();
}

}  // namespace

void add_bench_options(CLI::App& app, BenchArgs& a) {
  // Defaults measured best on a small (2-core) machine; docs/benchmarks.md ("End to end")
  // shows the comparison. One shard: one connection per follower, so a poll round is one
  // system call per follower. Blocking followers wake when bytes arrive instead of every
  // poll interval. An 8 MiB retained window stays hot in the cache and is touched (page
  // faulted) once, where the 64 MiB default is mostly first-touch in a short run.
  auto& c = a.config;
  c.workload.records = 200'000;
  c.shards = 1;
  c.polling = replication::PollingMode::blocking;
  c.retain_bytes = 8u << 20;
  // 256 KiB batches, sealed at the latest 1 ms after their first record: a writer that
  // streams fills them (about 240 records of 1 KiB), so the system calls, wake-ups and
  // acknowledgements of each batch are shared by four times as many records as at the
  // channel's 64 KiB / 200 us. The retained window still holds 32 of them.
  c.batch_bytes = 256u << 10;
  c.flush_us = 1000;
  add_run_options(app, a);
  add_output_options(app, a);
  add_live_options(app, a);
  add_failover_options(app, a);
}

Status finish_bench_args(const CLI::App& app, BenchArgs& a) {
  if (a.sweep || a.phased || a.burst || a.shift) {
    for (const CLI::Option* o : app.get_options()) {
      if (o->count() == 0 || o->get_name() == "--help") continue;
      if (std::find(kLiveFlags.begin(), kLiveFlags.end(), o->get_name()) == kLiveFlags.end())
        return Error(Errc::invalid_argument,
                     fmt::format("flag {} does not apply to --sweep / --phased / --burst / --shift",
                                 o->get_name()));
    }
    a.live.transport = a.config.transport;
    a.live.ack = a.config.ack;
    a.live.wal_dir = a.config.wal_dir;
    a.live.durability = a.config.durability;
    a.live.followers = app.count("--followers") != 0 ? a.config.followers : 1;
    a.live.seed = app.count("--seed") != 0 ? a.config.workload.seed : 1;
    a.live.sweep_sizes.clear();
    for (const auto& v : a.live.sweep_values) {
      uint32_t lo = 0, hi = 0;
      RDMAREPL_TRY(parse_value_size("--sweep-values", v, lo, hi));
      if (lo == 0) return Error(Errc::invalid_argument, "--sweep-values: a value size is >= 1");
      a.live.sweep_sizes.push_back({lo, hi});
    }
    return ok_status();
  }
  auto& w = a.config.workload;
  RDMAREPL_TRY(parse_value_size("--value-size", a.value_size, w.value_min, w.value_max));
  if (a.failovers != 0 || a.group_writes != 0) {
    if (a.failovers != 0 && a.group_writes != 0)
      return Error(Errc::invalid_argument, "--failovers and --group-writes are two runs: pick one");
    if (a.config.ack != replication::AckMode::quorum && a.config.ack != replication::AckMode::all)
      return Error(
          Errc::invalid_argument,
          fmt::format(
              "--failovers or --group-writes with --ack {}: a failover group loses what its "
              "leader acknowledged alone; use --ack quorum or all",
              to_string(a.config.ack)));
    if (w.value_min != w.value_max)
      return Error(Errc::invalid_argument,
                   "--failovers and --group-writes take one --value-size, not a range");
    a.config.timeout = std::chrono::seconds(a.timeout_s);
    return ok_status();
  }
  a.config.digest_only_store = a.store == "digest";
  if (w.keyspace == 0) w.keyspace = w.records;
  a.config.timeout = std::chrono::seconds(a.timeout_s);
  if (!a.config.key_file.empty()) RDMAREPL_TRY(kvdemo::read_key_file(a.config.key_file, a.config));
  return check_run(a.config);
}

}  // namespace rdmarepl::bench
