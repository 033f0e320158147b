// The replicated KV demo: a leader and followers as separate processes on loopback, each with
// an in-memory store; the leader writes a workload through a ReplicationChannel, one
// follower is killed (SIGKILL) part way and restarted with an empty store, the channel
// catches it up, and the three stores' digests are compared. Exit status 0 only when every
// digest matches. Run `scripts/demo --help`.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cluster.h"
#include "demo_cli.h"
#include "roles.h"
#include "run_config.h"

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;

int main(int argc, char** argv) {
  if (auto code = run_role_if_requested(argc, argv)) return *code;

  DemoCommand cmd = parse_demo_command(argc, argv);
  if (cmd.exit_code) return *cmd.exit_code;
  RunConfig& config = cmd.config;
  // A follower restarted with an empty store needs every record again: keep the whole run.
  if (config.kill_at > 0 && config.retain_bytes == 0) {
    config.retain_bytes = whole_run_retain_bytes(config);
  }

  const auto& w = config.workload;
  fmt::print(
      "replicated_kv: 1 leader + {} followers on 127.0.0.1, {} records, keys {} B, "
      "values {}-{} B, {}% erases, ack={}, seed {}{}\n",
      config.followers, w.records, w.key_size, w.value_min, w.value_max, w.erase_percent,
      to_string(config.ack), w.seed,
      config.kill_at > 0 ? fmt::format(", follower-1 killed at {:.0f}%", config.kill_at * 100)
                         : std::string());
  std::fflush(stdout);

  auto run = run_cluster(config);
  if (!run) {
    fmt::print(stderr, "replicated_kv: run failed: {}\n", run.error().to_string());
    return 3;
  }
  const RunResult& r = *run;
  fmt::print("\ndigests (sum of entry hashes / entries):\n");
  for (const auto& d : r.digests) {
    bool same = d.digest == r.digests.front().digest;
    fmt::print("  {:<12} {}  {}\n", d.node, d.digest.to_string(),
               d.node == "leader" ? "" : (same ? "match" : "MISMATCH"));
  }
  fmt::print("\nsummary\n");
  fmt::print("  transport        {}\n", r.transport);
  fmt::print("  records          {} ({:.1f} MB of keys and values)\n", r.records,
             static_cast<double>(r.payload_bytes) / 1e6);
  fmt::print("  time             {:.3f} s (first write to last acknowledgement)\n", r.seconds);
  fmt::print("  throughput       {:.0f} records/s, {:.1f} MB/s\n", r.ops_per_sec, r.mb_per_sec);
  fmt::print(
      "  replicate->ack   p50 {:.1f} us, p99 {:.1f} us, p999 {:.1f} us (avg {:.1f}, max "
      "{:.1f}; ack={})\n",
      r.latency.p50_us, r.latency.p99_us, r.latency.p999_us, r.latency.avg_us, r.latency.max_us,
      to_string(config.ack));
  fmt::print("  cpu              {:.2f} s over all processes\n", r.cpu_seconds);
  if (r.follower_killed) {
    fmt::print("  follower-1       killed and restarted; {} reconnects, {} batches resent\n",
               r.leader_metrics.reconnects, r.leader_metrics.batches_resent);
  }
  if (config.read_keys != 0) {
    fmt::print("  reads            {} keys read back from each of {} followers' read servers: {}\n",
               r.reads.keys, r.reads.replicas,
               r.reads.mismatches == 0
                   ? "every answer equals the leader's store"
                   : fmt::format("{} answers DIFFER from the leader's store", r.reads.mismatches));
  }
  fmt::print("  verified         {}\n",
             r.verified ? "yes: every store holds the same contents" : "NO: the stores differ");
  return r.verified ? 0 : 1;
}
