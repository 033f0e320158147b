// The replicated KV demo: a leader and followers as separate processes on loopback, each with
// an in-memory store; the leader writes a workload through a ReplicationChannel, one
// follower is killed (SIGKILL) part way and restarted with an empty store, the channel
// catches it up, and the three stores' digests are compared. Then a failover part: a group
// of three ReplicaNode members elects its leader through etcd (started by the demo), the
// leader is killed part way, a follower takes over, the writer follows it, the old leader
// rejoins as a follower, and the demo counts the acknowledged writes lost (0). Exit status
// 0 only when every digest matches and nothing acknowledged was lost. Run
// `scripts/demo --help`.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cluster.h"
#include "demo_cli.h"
#if RDMAREPL_KV_FAILOVER
#include "failover_run.h"
#endif
#include "roles.h"
#include "run_config.h"

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;

namespace {

// The failover part; true when it verified (or was not asked for).
bool failover_part(const DemoCommand& cmd) {
  if (cmd.failovers == 0) return true;
#if RDMAREPL_KV_FAILOVER
  FailoverConfig f;
  f.failovers = cmd.failovers;
  f.etcd = cmd.etcd;
  f.ack = cmd.config.ack == replication::AckMode::all ? replication::AckMode::all
                                                      : replication::AckMode::quorum;
  f.progress = cmd.config.progress;
  fmt::print(
      "\nfailover: a group of {} members electing its leader through etcd{}, ack={}, {} B "
      "values; the leader is killed (SIGKILL) {} time(s) under writes\n",
      f.members, f.etcd.empty() ? " (started here)" : " at " + f.etcd, to_string(f.ack),
      f.value_size, f.failovers);
  std::fflush(stdout);
  auto run = run_failovers(f);
  if (!run) {
    fmt::print(stderr, "replicated_kv: the failover part failed: {}\n", run.error().to_string());
    return false;
  }
  const FailoverResult& r = *run;
  fmt::print("\nfailover summary\n");
  std::vector<double> ms = r.failover_ms;
  std::sort(ms.begin(), ms.end());
  fmt::print(
      "  failover time    {} (SIGKILL of the leader to the first write the new leader "
      "acknowledged)\n",
      ms.empty() ? std::string("-")
                 : fmt::format("median {:.0f} ms, max {:.0f} ms over {}", ms[ms.size() / 2],
                               ms.back(), ms.size()));
  fmt::print("  acknowledged     {} writes\n", r.acknowledged);
  fmt::print("  acknowledged lost: {}\n", r.lost);
  const auto& lin = r.linearizability;
  fmt::print("  linearizable     {}\n",
             lin.linearizable
                 ? fmt::format("yes: {} operations on {} register keys, {} reads confirmed by "
                               "the leader",
                               lin.operations, lin.keys, r.reads)
                 : "NO: " + lin.explanation);
  for (const auto& [node, d] : r.digests)
    fmt::print("  {:<12} {}  {}\n", node, d.to_string(),
               d == r.digests.front().second ? "match" : "MISMATCH");
  fmt::print(
      "  verified         {}\n",
      r.verified ? "yes: every member holds every acknowledged write, all stores equal" : "NO");
  if (r.stale_acknowledged != 0 || r.epoch_conflicts != 0)
    fmt::print("  stale acknowledgements {}, epochs acknowledged by two members {}\n",
               r.stale_acknowledged, r.epoch_conflicts);
  return r.verified;
#else
  fmt::print(
      "\nfailover: skipped: this build has no rdmarepl::failover (it needs libcurl and "
      "nlohmann-json; scripts/setup installs them)\n");
  return true;
#endif
}

}  // namespace

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
  if (!r.verified) return 1;
  return failover_part(cmd) ? 0 : 1;
}
