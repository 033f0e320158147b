// rdmarepl-bench: the end-to-end benchmark. A leader and followers run as separate processes
// on loopback; the leader replicates a write workload through a ReplicationChannel and the
// run ends when every follower acknowledged the last write. Prints a table, optionally writes
// JSON, and with --compare runs a baseline in the same run and prints the ratio:
//   --compare tcp-stream   a plain TCP socket stream of the same records between two processes
//   --compare redis        Redis 7 master + replicas (benchmarks/compare/redis_replication.sh)
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cluster.h"
#include "flags.h"
#include "json_writer.h"
#include "machine.h"
#include "metrics_text.h"
#include "redis_compare.h"
#include "roles.h"
#include "run_config.h"
#include "sweep.h"
#include "tcp_stream.h"

#ifndef RDMAREPL_REDIS_SCRIPT
#define RDMAREPL_REDIS_SCRIPT "benchmarks/compare/redis_replication.sh"
#endif

namespace {

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;
using namespace rdmarepl::bench;

constexpr const char* kUsage =
    R"(rdmarepl-bench: end-to-end replication benchmark (leader and followers are processes)

  --transport T      auto | tcp | verbs (default auto)
  --followers N      followers (default 2)
  --value-size B     value bytes (default 1024); A-B for uniform sizes in [A, B]
  --key-size B       key bytes (default 16)
  --records N        records (default 200000; k/m suffixes)
  --keyspace N       distinct keys (default: records; keys repeat, as with redis-benchmark -r)
  --ack M            none | one | all | quorum (default all)
  --batch-bytes N    batch size (default 256 KiB; the channel's own default is 64 KiB)
  --shards N         shards, i.e. connections per follower (default 1)
  --polling P        followers' poller: busy | sleep | blocking (default blocking)
  --leader-polling P manual | busy | sleep | blocking (default manual: the writer drives it)
  --retain-bytes N   leader's retained window per shard (default 8MiB)
  --store S          digest (default: every process keeps a hash per key, enough for the
                     digest comparison) | map (keep every value, as the demo does)
  --poll-us N        poll interval / longest block in microseconds (default: the channel's)
  --flush-us N       seal a batch this long after its first record (default 1000; the
                     channel's own default is 200)
  --outstanding N    writes in flight at most (default 0: no limit, open loop). 1 is a
                     closed loop: each write waits for its commit before the next is
                     issued, and the wait sends its batch at once (flush delay not added)
  --seed N           workload seed (default 42)
  --wal-dir D        write-ahead logs: the leader logs to D/leader, follower n to
                     D/follower-n (emptied before the run); default: no log
  --durability M     none | batch | interval (default batch; with --wal-dir)
  --json PATH        write the result as JSON
  --compare X        redis | tcp-stream; may be given twice. Runs the baseline in the same run
                     and prints our number as a multiple of it
  --redis-pipeline P redis-benchmark pipeline depth (default 16; see redis_replication.sh)
  --redis-script S   path of redis_replication.sh (default: the source tree's)
  --timeout S        give up after S seconds (default 600)
  --quiet            no progress output
  --help

Tuning runs (followers are processes, the leader runs in this process with a poller thread
and its knobs move live; docs/tuning.md and docs/benchmarks.md "Tuning"):
  --sweep            writes the tuning dataset (CSV): for each value size x offered rate,
                     --sweep-windows windows of --window-ms while a random walk moves the
                     knobs between windows
    --sweep-values L   value sizes, comma separated (default 64,1024,4096,16384)
    --sweep-rates L    offered MB/s, comma separated (default 2,8,32,128)
    --sweep-windows N  windows per cell (default 40); --window-ms N (default 200)
    --sweep-out PATH   the dataset (default sweep.csv); --seed N (default 1)
  --phased           the phased evaluation (benchmarks/tuning/): static-default,
                     heuristic, xgboost and best-static over four phases
    --rate L           offered MB/s of phase 1 (default 20); later phases offer 1.5 L
    --phase-windows N  windows per phase (default 20); --window-ms N (default 250)
    --grid-windows N   windows per best-static grid setting (default 8)
    --warmup-windows N unmeasured windows at phase 1's load first (default 8)
    --latency-target-us N  the tuners' p99 target (default 20000)
    --tuner-period-ms N    the tuners' period (default 250)
    --model PATH       XGBoost model (default: the shipped one)
    --phased-csv PATH  per-window results for the plot (default phased.csv)
  --followers N, --transport T and --ack M apply to both (default 1 follower)
)";

std::string latency_json(double avg, double p50, double p99, double p999) {
  JsonWriter j;
  j.begin_object().field("avg", avg).field("p50", p50).field("p99", p99).field("p999", p999);
  j.end_object();
  return j.str();
}

void print_row(const std::string& name, const std::string& transport, double ops, double mb,
               const std::string& lat, double cpu, uint64_t records, bool verified) {
  fmt::print("{:<22} {:<28} {:>12.0f} {:>9.1f} {:<34} {:>8.2f} {:>9.2f} {:>8}\n", name, transport,
             ops, mb, lat, cpu, records > 0 ? cpu * 1e6 / static_cast<double>(records) : 0.0,
             verified ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
  if (auto code = run_tcp_sink_if_requested(argc, argv)) return *code;
  if (auto code = run_role_if_requested(argc, argv)) return *code;

  auto flags = Flags::parse(argc, argv, {"help", "quiet", "sweep", "phased"});
  if (!flags) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", flags.error().message());
    return 2;
  }
  if (flags->has("help")) {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (flags->has("sweep") || flags->has("phased")) {
    const std::vector<std::string> live_known = {"sweep",
                                                 "phased",
                                                 "sweep-values",
                                                 "sweep-rates",
                                                 "sweep-windows",
                                                 "window-ms",
                                                 "sweep-out",
                                                 "seed",
                                                 "rate",
                                                 "warmup-windows",
                                                 "phase-windows",
                                                 "grid-windows",
                                                 "latency-target-us",
                                                 "tuner-period-ms",
                                                 "model",
                                                 "phased-csv",
                                                 "followers",
                                                 "transport",
                                                 "ack",
                                                 "quiet"};
    if (auto unknown = flags->unknown(live_known); !unknown.empty()) {
      fmt::print(stderr, "rdmarepl-bench: flag {} does not apply to --sweep / --phased\n",
                 unknown.front());
      return 2;
    }
    return flags->has("sweep") ? run_sweep(*flags) : run_phased(*flags);
  }
  auto known = run_config_flag_names();
  known.insert(known.end(),
               {"help", "quiet", "json", "compare", "redis-pipeline", "redis-script", "timeout"});
  if (auto unknown = flags->unknown(known); !unknown.empty()) {
    fmt::print(stderr, "rdmarepl-bench: unknown flag {}; try --help\n", unknown.front());
    return 2;
  }
  RunConfig config;
  config.workload.records = 200'000;
  config.workload.value_min = config.workload.value_max = 1024;
  // Defaults measured best on a small (2-core) machine; docs/benchmarks.md ("End to end")
  // shows the comparison. One shard: one connection per follower, so a poll round is one
  // system call per follower. Blocking followers wake when bytes arrive instead of every
  // poll interval. An 8 MiB retained window stays hot in the cache and is touched (page
  // faulted) once, where the 64 MiB default is mostly first-touch in a short run.
  config.shards = 1;
  config.polling = replication::PollingMode::blocking;
  config.retain_bytes = 8u << 20;
  // 256 KiB batches, sealed at the latest 1 ms after their first record: a writer that
  // streams fills them (about 240 records of 1 KiB), so the system calls, wake-ups and
  // acknowledgements of each batch are shared by four times as many records as at the
  // channel's 64 KiB / 200 us, which sealed batches of 1 KiB values by the delay rather than
  // by size. The retained window still holds 32 of them.
  config.batch_bytes = 256u << 10;
  config.flush_us = 1000;
  // The stores keep a hash per key instead of the value: the same digests, without
  // gigabytes of fresh (page-faulting) store memory per process at 16 KiB values.
  config.digest_only_store = true;
  if (auto s = apply_flags(*flags, config); !s) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", s.error().message());
    return 2;
  }
  if (config.workload.keyspace == 0) config.workload.keyspace = config.workload.records;
  config.progress = !flags->has("quiet") && ::isatty(STDOUT_FILENO);
  auto timeout = flags->get_u64("timeout", 600);
  auto pipeline = flags->get_u64("redis-pipeline", 16);
  if (!timeout || !pipeline) {
    fmt::print(stderr, "rdmarepl-bench: {}\n",
               (!timeout ? timeout.error() : pipeline.error()).message());
    return 2;
  }
  config.timeout = std::chrono::seconds(*timeout);
  bool compare_redis = false;
  bool compare_stream = false;
  for (const auto& c : flags->get_all("compare")) {
    if (c == "redis") {
      compare_redis = true;
    } else if (c == "tcp-stream") {
      compare_stream = true;
    } else {
      fmt::print(stderr, "rdmarepl-bench: --compare '{}' is not redis or tcp-stream\n", c);
      return 2;
    }
  }
  const auto& w = config.workload;
  const uint32_t value_avg = (w.value_min + w.value_max) / 2;
  auto machine = machine_info();
  fmt::print(
      "rdmarepl-bench: {} records, key {} B, value {} B, {} follower(s), ack={}, on {} "
      "cores ({}), {}\n",
      w.records, w.key_size,
      w.value_min == w.value_max ? std::to_string(w.value_min)
                                 : fmt::format("{}-{}", w.value_min, w.value_max),
      config.followers, to_string(config.ack), machine.cores, machine.cpu_model, machine.kernel);
  std::fflush(stdout);

  if (!config.wal_dir.empty()) {
    // Every run starts from empty logs: a log with content would be recovered into the
    // stores and skew both the numbers and the digests.
    std::error_code ec;
    std::filesystem::create_directories(config.wal_dir, ec);
    for (int i = -1; i < static_cast<int>(config.followers); ++i)
      std::filesystem::remove_all(wal_dir_of(config, i), ec);
    fmt::print("write-ahead logs under {} (durability={})\n", config.wal_dir,
               to_string(config.durability));
  }
  auto run = run_cluster(config);
  if (!run) {
    fmt::print(stderr, "rdmarepl-bench: run failed: {}\n", run.error().to_string());
    return 3;
  }
  const RunResult& r = *run;

  std::optional<StreamResult> stream;
  if (compare_stream) {
    auto s = run_tcp_stream(w.records, w.key_size + value_avg);
    if (!s) {
      fmt::print(stderr, "rdmarepl-bench: tcp-stream baseline failed: {}\n", s.error().to_string());
      return 3;
    }
    stream = *s;
  }
  std::optional<RedisResult> redis;
  std::string redis_skipped;
  if (compare_redis) {
    RedisRun rr;
    const char* env = std::getenv("RDMAREPL_REDIS_SCRIPT");
    rr.script = flags->get("redis-script", env != nullptr ? env : RDMAREPL_REDIS_SCRIPT);
    rr.records = w.records;
    rr.value_size = value_avg;
    rr.keyspace = w.keyspace;
    rr.followers = config.followers;
    rr.pipeline = static_cast<uint32_t>(*pipeline);
    auto res = run_redis(rr);
    if (!res) {
      if (!res.error().is(Errc::unsupported)) {
        fmt::print(stderr, "rdmarepl-bench: Redis baseline failed: {}\n", res.error().to_string());
        return 3;
      }
      redis_skipped = res.error().message();
      fmt::print("Redis comparison skipped: {}\n", redis_skipped);
    } else {
      redis = *res;
    }
  }

  fmt::print("\n{:<22} {:<28} {:>12} {:>9} {:<34} {:>8} {:>9} {:>8}\n", "system", "transport",
             "ops/s", "MB/s", "latency us avg/p50/p99/p999", "cpu s", "cpu us/op", "verified");
  print_row(
      "rdmarepl",
      r.transport + " ack=" + std::string(to_string(config.ack)) +
          (config.outstanding == 0 ? std::string() : fmt::format(" outst={}", config.outstanding)) +
          (config.wal_dir.empty() ? std::string()
                                  : " wal=" + std::string(to_string(config.durability))),
      r.ops_per_sec, r.mb_per_sec,
      fmt::format("{:.0f}/{:.0f}/{:.0f}/{:.0f}", r.latency.avg_us, r.latency.p50_us,
                  r.latency.p99_us, r.latency.p999_us),
      r.cpu_seconds, r.records, r.verified);
  if (stream) {
    print_row("tcp-stream (1 peer)", "tcp socket, no acks", stream->ops_per_sec, stream->mb_per_sec,
              "-", stream->cpu_seconds, stream->records, stream->verified);
  }
  if (redis) {
    print_row(
        fmt::format("redis (P={})", *pipeline), "tcp, redis replication", redis->ops_per_sec,
        redis->mb_per_sec,
        fmt::format("{:.0f}/{:.0f}/{:.0f}/- (client)", redis->avg_us, redis->p50_us, redis->p99_us),
        redis->cpu_seconds, w.records, redis->verified);
  }
  fmt::print("\nrdmarepl cpu by process:");
  for (const auto& [name, secs] : r.cpu_by_process) fmt::print(" {} {:.2f} s;", name, secs);
  fmt::print("\n\n");
  double stream_ratio = stream ? r.mb_per_sec / stream->mb_per_sec : 0;
  double redis_ratio = redis ? r.ops_per_sec / redis->ops_per_sec : 0;
  if (stream) {
    fmt::print(
        "rdmarepl bandwidth = {:.2f} x the plain TCP stream ({:.0f}% of it; "
        "{} follower(s) vs 1 receiver)\n",
        stream_ratio, stream_ratio * 100, config.followers);
  }
  if (redis) {
    fmt::print("rdmarepl replicated writes/s = {:.2f} x Redis replication's\n", redis_ratio);
  }

  if (flags->has("json")) {
    JsonWriter j;
    j.begin_object();
    j.field("system", "rdmarepl")
        .field("transport", r.transport)
        .field("followers", config.followers);
    j.field("key_size", w.key_size).field("value_size", value_avg);
    j.field("value_min", w.value_min).field("value_max", w.value_max);
    j.field("records", r.records).field("keyspace", w.keyspace);
    j.field("ack", to_string(config.ack));
    j.field("wal", config.wal_dir.empty() ? std::string_view("off") : to_string(config.durability));
    j.field("shards", config.shards).field("batch_bytes", config.batch_bytes);
    j.field("polling", to_string(config.polling));
    j.field("store", config.digest_only_store ? "digest" : "map");
    j.field("seconds", r.seconds)
        .field("ops_per_sec", r.ops_per_sec)
        .field("mb_per_sec", r.mb_per_sec);
    j.raw("latency_us",
          latency_json(r.latency.avg_us, r.latency.p50_us, r.latency.p99_us, r.latency.p999_us));
    j.field("outstanding", config.outstanding);
    j.field("latency_kind",
            config.outstanding == 1   ? "replicate() to committed under the ack mode, every write, "
                                        "closed loop (one write at a time)"
            : config.outstanding == 0 ? "replicate() to committed under the ack mode, every write, "
                                        "open loop (writes back to back)"
                                      : "replicate() to committed under the ack mode, every write, "
                                        "at most 'outstanding' writes in flight");
    j.field("cpu_seconds", r.cpu_seconds);
    j.field("cpu_us_per_op", r.cpu_seconds * 1e6 / static_cast<double>(r.records));
    j.field("verified", r.verified);
    j.field("batches", r.leader_metrics.batches_sealed)
        .field("reconnects", r.leader_metrics.reconnects);
    j.raw("leader_metrics", metrics_to_json(r.leader_metrics));
    j.begin_object("machine")
        .field("nproc", machine.cores)
        .field("cpu_model", machine.cpu_model)
        .field("kernel", machine.kernel)
        .end_object();
    j.begin_object("compare");
    if (stream) {
      JsonWriter s;
      s.begin_object().field("system", "tcp-stream").field("records", stream->records);
      s.field("record_bytes", uint64_t{w.key_size} + value_avg).field("seconds", stream->seconds);
      s.field("ops_per_sec", stream->ops_per_sec).field("mb_per_sec", stream->mb_per_sec);
      s.field("cpu_seconds", stream->cpu_seconds).field("verified", stream->verified);
      s.field("ratio_mb_per_sec", stream_ratio).end_object();
      j.raw("tcp_stream", s.str());
    }
    if (redis) {
      j.raw("redis", redis->json);
      j.field("redis_ratio_ops_per_sec", redis_ratio);
    } else if (!redis_skipped.empty()) {
      j.field("redis_skipped", redis_skipped);
    }
    j.end_object();
    j.end_object();
    std::ofstream out(flags->get("json"));
    out << j.str() << "\n";
    if (!out) {
      fmt::print(stderr, "rdmarepl-bench: cannot write {}\n", flags->get("json"));
      return 3;
    }
  }
  return r.verified ? 0 : 1;
}
