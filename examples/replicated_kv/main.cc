// The replicated KV demo: a leader and followers as separate processes on loopback, each with
// an in-memory store; the leader writes a workload through a ReplicationChannel, one
// follower is killed (SIGKILL) part way and restarted with an empty store, the channel
// catches it up, and the three stores' digests are compared. Exit status 0 only when every
// digest matches. Run `scripts/demo --help`.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cluster.h"
#include "flags.h"
#include "roles.h"
#include "run_config.h"

namespace {

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;

constexpr const char* kUsage =
    R"(replicated_kv: replicate a key-value workload from a leader to followers
(separate processes on loopback), kill and restart a follower part way, verify every store.

  --records N          records to write (default 1000000; k/m suffixes: 200k, 1m)
  --followers N        follower processes (default 2)
  --value-size A-B     value sizes, uniform in [A, B] bytes, or one size N (default 16-1024)
  --key-size N         key bytes (default 16)
  --transport T        auto | tcp | verbs (default auto: verbs when an RDMA device is
                       active, else tcp)
  --ack M              none | one | all | quorum: when a write counts as committed (default all)
  --no-kill            do not kill and restart a follower
  --kill-at F          fraction of the records after which follower-1 is killed (default 0.4)
  --seed N             workload seed (default 42); the same seed gives the same workload
  --erase-percent P    share of the writes that are erases (default 1)
  --shards N           shards, i.e. connections per follower (default 1)
  --batch-bytes N      batch size (default: the channel's, 64 KiB)
  --polling P          followers' poller: busy | sleep | blocking (default blocking)
  --leader-polling P   manual | busy | sleep | blocking (default manual: the writer drives it)
  --poll-us N          poll interval / longest block in microseconds (default: the channel's)
  --flush-us N         seal a batch this long after its first record (default: the channel's)
  --outstanding N      writes in flight at most (default 0: no limit); 1 waits for each
                       write's commit before the next
  --retain-bytes N     leader's retained window per shard (default: the whole run when a
                       follower is killed, so that it can be caught up from scratch)
  --metrics-port P     serve Prometheus metrics: the leader on 127.0.0.1:P/metrics,
                       follower i (1-based) on port P+i (default 0: none)
  --linger S           after the run, keep every process (and its metrics) up S seconds
                       before stopping them (default 0)
  --timeout S          give up after S seconds (default 300)
  --quiet              no progress output
  --help               this text

Exit status: 0 when every follower's contents equal the leader's, 1 when they differ,
2 on a usage error, 3 when the run failed.
)";

}  // namespace

int main(int argc, char** argv) {
  if (auto code = run_role_if_requested(argc, argv)) return *code;

  auto flags = Flags::parse(argc, argv, {"help", "no-kill", "quiet"});
  if (!flags) {
    fmt::print(stderr, "replicated_kv: {}\n", flags.error().message());
    return 2;
  }
  if (flags->has("help")) {
    fmt::print("{}", kUsage);
    return 0;
  }
  auto known = run_config_flag_names();
  known.insert(known.end(), {"help", "no-kill", "kill-at", "quiet", "timeout", "linger"});
  if (auto unknown = flags->unknown(known); !unknown.empty()) {
    fmt::print(stderr, "replicated_kv: unknown flag {}; try --help\n", unknown.front());
    return 2;
  }

  RunConfig config;
  config.workload.erase_percent = 1;
  // One connection per follower and followers that block until bytes arrive: the fewest
  // system calls and wake-ups per batch on a small machine (see docs/benchmarks.md).
  config.shards = 1;
  config.polling = replication::PollingMode::blocking;
  if (auto s = apply_flags(*flags, config); !s) {
    fmt::print(stderr, "replicated_kv: {}\n", s.error().message());
    return 2;
  }
  config.kill_at = flags->has("no-kill") ? 0.0 : std::stod(flags->get("kill-at", "0.4"));
  if (config.kill_at < 0 || config.kill_at >= 1) {
    fmt::print(stderr, "replicated_kv: --kill-at {} is out of range; use 0 < F < 1\n",
               config.kill_at);
    return 2;
  }
  config.restart_at = std::min(config.kill_at + 0.1, 0.95);
  config.progress = !flags->has("quiet");
  auto timeout = flags->get_u64("timeout", 300);
  if (!timeout) {
    fmt::print(stderr, "replicated_kv: {}\n", timeout.error().message());
    return 2;
  }
  config.timeout = std::chrono::seconds(*timeout);
  auto linger = flags->get_u64("linger", 0);
  if (!linger) {
    fmt::print(stderr, "replicated_kv: {}\n", linger.error().message());
    return 2;
  }
  config.linger = std::chrono::seconds(*linger);
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
  fmt::print("  verified         {}\n",
             r.verified ? "yes: every store holds the same contents" : "NO: the stores differ");
  return r.verified ? 0 : 1;
}
