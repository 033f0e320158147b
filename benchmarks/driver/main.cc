// rdmarepl-bench: the end-to-end benchmark. A leader and followers run as separate processes
// on loopback; the leader replicates a write workload through a ReplicationChannel and the
// run ends when every follower acknowledged the last write. Prints a table, optionally writes
// JSON, and with --compare runs a baseline in the same run and prints the ratio:
//   --compare tcp-stream   a plain TCP socket stream of the same records between two processes
//   --compare redis        Redis 7 master + replicas (benchmarks/compare/redis_replication.sh)
// Arguments are parsed with CLI11 (bench_args.h), the JSON is written with nlohmann-json.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench_args.h"
#include "cluster.h"
#if RDMAREPL_KV_FAILOVER
#include "failover_bench.h"
#endif
#include "machine.h"
#include "metrics_text.h"
#include "redis_compare.h"
#include "result_file.h"
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
using Json = nlohmann::ordered_json;

// The baselines of one run, when asked for.
struct Baselines {
  std::optional<StreamResult> stream;
  std::optional<RedisResult> redis;
  std::string redis_skipped;
  double stream_ratio = 0;
  double redis_ratio = 0;
};

void print_row(const std::string& name, const std::string& transport, double ops, double mb,
               const std::string& lat, double cpu, uint64_t records, bool verified) {
  fmt::print("{:<22} {:<28} {:>12.0f} {:>9.1f} {:<34} {:>8.2f} {:>9.2f} {:>8}\n", name, transport,
             ops, mb, lat, cpu, records > 0 ? cpu * 1e6 / static_cast<double>(records) : 0.0,
             verified ? "yes" : "NO");
}

void print_header(const RunConfig& config, const MachineInfo& machine) {
  const auto& w = config.workload;
  fmt::print(
      "rdmarepl-bench: {} records, key {} B, value {} B, {} follower(s), ack={}, on {} "
      "cores ({}), {}\n",
      w.records, w.key_size,
      w.value_min == w.value_max ? std::to_string(w.value_min)
                                 : fmt::format("{}-{}", w.value_min, w.value_max),
      config.followers, to_string(config.ack), machine.cores, machine.cpu_model, machine.kernel);
  if (!config.pre_shared_key.empty())
    fmt::print("pre-shared key from {}: handshakes authenticated, every batch carries a MAC\n",
               config.key_file);
  std::fflush(stdout);
  if (!config.wal_dir.empty()) {
    fmt::print("write-ahead logs under {} (durability={})\n", config.wal_dir,
               to_string(config.durability));
  }
}

// Runs the baselines `args.compare` names; an error ends the run (exit status 3).
Result<Baselines> run_baselines(const BenchArgs& args, const RunResult& r) {
  Baselines b;
  const auto& w = args.config.workload;
  const uint32_t value_avg = (w.value_min + w.value_max) / 2;
  auto wants = [&](const char* x) {
    return std::find(args.compare.begin(), args.compare.end(), x) != args.compare.end();
  };
  if (wants("tcp-stream")) {
    auto s = run_tcp_stream(w.records, w.key_size + value_avg);
    if (!s) return Error(s.error().code(), "tcp-stream baseline failed: " + s.error().to_string());
    b.stream = *s;
    b.stream_ratio = r.mb_per_sec / b.stream->mb_per_sec;
  }
  if (wants("redis")) {
    RedisRun rr;
    const char* env = std::getenv("RDMAREPL_REDIS_SCRIPT");
    rr.script = !args.redis_script.empty() ? args.redis_script
                : env != nullptr           ? env
                                           : RDMAREPL_REDIS_SCRIPT;
    rr.records = w.records;
    rr.value_size = value_avg;
    rr.keyspace = w.keyspace;
    rr.followers = args.config.followers;
    rr.pipeline = static_cast<uint32_t>(args.redis_pipeline);
    auto res = run_redis(rr);
    if (!res && !res.error().is(Errc::unsupported))
      return Error(res.error().code(), "Redis baseline failed: " + res.error().to_string());
    if (!res) {
      b.redis_skipped = res.error().message();
      fmt::print("Redis comparison skipped: {}\n", b.redis_skipped);
    } else {
      b.redis = *res;
      b.redis_ratio = r.ops_per_sec / b.redis->ops_per_sec;
    }
  }
  return b;
}

void print_table(const BenchArgs& args, const RunResult& r, const Baselines& b) {
  const auto& config = args.config;
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
  if (b.stream) {
    print_row("tcp-stream (1 peer)", "tcp socket, no acks", b.stream->ops_per_sec,
              b.stream->mb_per_sec, "-", b.stream->cpu_seconds, b.stream->records,
              b.stream->verified);
  }
  if (b.redis) {
    print_row(fmt::format("redis (P={})", args.redis_pipeline), "tcp, redis replication",
              b.redis->ops_per_sec, b.redis->mb_per_sec,
              fmt::format("{:.0f}/{:.0f}/{:.0f}/- (client)", b.redis->avg_us, b.redis->p50_us,
                          b.redis->p99_us),
              b.redis->cpu_seconds, config.workload.records, b.redis->verified);
  }
  fmt::print("\nrdmarepl cpu by process:");
  for (const auto& [name, secs] : r.cpu_by_process) fmt::print(" {} {:.2f} s;", name, secs);
  fmt::print("\n\n");
  if (b.stream) {
    fmt::print(
        "rdmarepl bandwidth = {:.2f} x the plain TCP stream ({:.0f}% of it; "
        "{} follower(s) vs 1 receiver)\n",
        b.stream_ratio, b.stream_ratio * 100, config.followers);
  }
  if (b.redis)
    fmt::print("rdmarepl replicated writes/s = {:.2f} x Redis replication's\n", b.redis_ratio);
}

std::string latency_kind(uint64_t outstanding) {
  const std::string what = "replicate() to committed under the ack mode, every write, ";
  if (outstanding == 1) return what + "closed loop (one write at a time)";
  if (outstanding == 0) return what + "open loop (writes back to back)";
  return what + "at most 'outstanding' writes in flight";
}

Json compare_json(const BenchArgs& args, const Baselines& b) {
  const auto& w = args.config.workload;
  Json c = Json::object();
  if (b.stream) {
    c["tcp_stream"] = {{"system", "tcp-stream"},
                       {"records", b.stream->records},
                       {"record_bytes", uint64_t{w.key_size} + (w.value_min + w.value_max) / 2},
                       {"seconds", b.stream->seconds},
                       {"ops_per_sec", b.stream->ops_per_sec},
                       {"mb_per_sec", b.stream->mb_per_sec},
                       {"cpu_seconds", b.stream->cpu_seconds},
                       {"verified", b.stream->verified},
                       {"ratio_mb_per_sec", b.stream_ratio}};
  }
  if (b.redis) {
    c["redis"] = Json::parse(b.redis->json.dump());
    c["redis_ratio_ops_per_sec"] = b.redis_ratio;
  } else if (!b.redis_skipped.empty()) {
    c["redis_skipped"] = b.redis_skipped;
  }
  return c;
}

Json result_json(const BenchArgs& args, const RunResult& r, const Baselines& b,
                 const MachineInfo& machine) {
  const auto& config = args.config;
  const auto& w = config.workload;
  Json j;
  j["system"] = "rdmarepl";
  j["transport"] = r.transport;
  j["followers"] = config.followers;
  j["key_size"] = w.key_size;
  j["value_size"] = (w.value_min + w.value_max) / 2;
  j["value_min"] = w.value_min;
  j["value_max"] = w.value_max;
  j["records"] = r.records;
  j["keyspace"] = w.keyspace;
  j["ack"] = to_string(config.ack);
  j["wal"] = config.wal_dir.empty() ? std::string_view("off") : to_string(config.durability);
  j["mac"] = !config.pre_shared_key.empty();
  j["shards"] = config.shards;
  j["batch_bytes"] = config.batch_bytes;
  j["polling"] = to_string(config.polling);
  j["store"] = config.digest_only_store ? "digest" : "map";
  j["seconds"] = r.seconds;
  j["ops_per_sec"] = r.ops_per_sec;
  j["mb_per_sec"] = r.mb_per_sec;
  j["latency_us"] = {{"avg", r.latency.avg_us},
                     {"p50", r.latency.p50_us},
                     {"p99", r.latency.p99_us},
                     {"p999", r.latency.p999_us}};
  j["outstanding"] = config.outstanding;
  j["latency_kind"] = latency_kind(config.outstanding);
  j["cpu_seconds"] = r.cpu_seconds;
  j["cpu_us_per_op"] = r.cpu_seconds * 1e6 / static_cast<double>(r.records);
  j["verified"] = r.verified;
  j["batches"] = r.leader_metrics.batches_sealed;
  j["reconnects"] = r.leader_metrics.reconnects;
  j["leader_metrics"] = Json::parse(metrics_to_json(r.leader_metrics));
  // Registrations of each node's channel after create() and at the end: the channel's
  // memory is registered once, up front, so the two are equal and the sum of the
  // differences is 0 (docs/replication.md, "Registered memory").
  Json regs = Json::array();
  uint64_t after_create = 0;
  for (const auto& n : r.registrations) {
    regs.push_back({{"node", n.node}, {"at_create", n.at_create}, {"at_end", n.at_end}});
    after_create += n.at_end - std::min(n.at_end, n.at_create);
  }
  j["memory_registrations"] = regs;
  j["memory_registrations_after_create"] = after_create;
  j["machine"] = machine_json(machine);
  j["compare"] = compare_json(args, b);
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto code = run_tcp_sink_if_requested(argc, argv)) return *code;
  if (auto code = run_role_if_requested(argc, argv)) return *code;

  CLI::App app{
      "rdmarepl-bench: end-to-end replication benchmark (leader and followers are "
      "processes)"};
  BenchArgs args;
  add_bench_options(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (auto st = finish_bench_args(app, args); !st) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", st.error().message());
    return 2;
  }
  if (args.sweep) return run_sweep(args.live);
  if (args.phased) return run_phased(args.live);
  if (args.burst) return run_burst(args.live);
  if (args.shift) return run_shift(args.live);
  if (args.failovers != 0 || args.group_writes != 0) {
#if RDMAREPL_KV_FAILOVER
    return args.failovers != 0 ? run_failover_bench(args) : run_group_bench(args);
#else
    fmt::print(stderr,
               "rdmarepl-bench: --failovers and --group-writes need rdmarepl::failover, which this "
               "build lacks "
               "(it needs libcurl and nlohmann-json; scripts/setup installs them)\n");
    return 3;
#endif
  }

  args.config.progress = !args.quiet && ::isatty(STDOUT_FILENO);
  const auto machine = machine_info();
  print_header(args.config, machine);
  // Every run starts from empty logs: a log with content would be recovered into the stores
  // and skew both the numbers and the digests.
  if (auto st = empty_wal_dirs(args.config); !st.ok()) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", st.error().message());
    return 3;
  }
  auto run = run_cluster(args.config);
  if (!run) {
    fmt::print(stderr, "rdmarepl-bench: run failed: {}\n", run.error().to_string());
    return 3;
  }
  auto baselines = run_baselines(args, *run);
  if (!baselines) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", baselines.error().message());
    return 3;
  }
  print_table(args, *run, *baselines);
  if (!args.json.empty() && !write_result(args.json, result_json(args, *run, *baselines, machine)))
    return 3;
  return run->verified ? 0 : 1;
}
