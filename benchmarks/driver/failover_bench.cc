#include "failover_bench.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "failover_run.h"
#include "machine.h"
#include "result_file.h"

namespace rdmarepl::bench {

namespace {

// Nearest-rank percentile of sorted `v` (q in (0, 1]).
double percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

int run_failover_bench(const BenchArgs& args) {
  kvdemo::FailoverConfig c;
  c.members = args.members;
  c.failovers = args.failovers;
  c.fault = args.fault;
  c.history = args.history;
  c.writes_per_leader = args.failover_writes;
  c.value_size = args.config.workload.value_min;
  c.ack = args.config.ack;
  c.lease_ttl = std::chrono::milliseconds(args.lease_ms);
  c.suspect_after = std::chrono::milliseconds(args.suspect_ms);
  c.etcd = args.etcd;
  c.etcd_members = args.etcd_members;
  c.progress = !args.quiet;
  c.timeout = args.config.timeout;
  const auto machine = machine_info();
  fmt::print(
      "rdmarepl-bench --failovers: {} members electing their leader through etcd{}, ack={}, "
      "{} B values, lease {} ms, suspect after {} ms, {} rounds of {}, {} writes per "
      "round, on {} cores ({})\n",
      c.members, c.etcd.empty() ? " (started here)" : " at " + c.etcd, to_string(c.ack),
      c.value_size, c.lease_ttl.count(), c.suspect_after.count(), c.failovers,
      kvdemo::to_string(c.fault), c.writes_per_leader, machine.cores, machine.cpu_model);
  std::fflush(stdout);
  auto run = kvdemo::run_failovers(c);
  if (!run) {
    fmt::print(stderr, "rdmarepl-bench: failover run failed: {}\n", run.error().to_string());
    return 3;
  }
  const auto& r = *run;
  std::vector<double> ms = r.failover_ms;
  std::sort(ms.begin(), ms.end());
  const double p50 = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
  const double max = ms.empty() ? 0 : ms.back(), min = ms.empty() ? 0 : ms.front();
  const auto& lin = r.linearizability;
  fmt::print("\n{:<24} {:>9} {:>9} {:>9} {:>9}\n", "failover (ms)", "p50", "p99", "max", "min");
  fmt::print("{:<24} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f}\n",
             fmt::format("fault -> ack, n={}", ms.size()), p50, p99, max, min);
  if (r.etcd_member_killed) fmt::print("etcd                     3 members, e0 killed halfway\n");
  fmt::print("acknowledged writes      {}\n", r.acknowledged);
  fmt::print("acknowledged lost        {}\n", r.lost);
  fmt::print("stale acknowledgements   {}\n", r.stale_acknowledged);
  fmt::print("epochs with two ackers   {}\n", r.epoch_conflicts);
  fmt::print("linearizable             {}\n",
             lin.linearizable ? fmt::format("yes ({} operations on {} keys, {} confirmed reads)",
                                            lin.operations, lin.keys, r.reads)
                              : "NO: " + lin.explanation);
  fmt::print("verified                 {}\n",
             r.verified ? "yes (nothing acknowledged lost, every member's store equal, "
                          "linearizable)"
                        : "NO");
  if (!args.json.empty()) {
    nlohmann::ordered_json j;
    j["mode"] = "failover";
    j["members"] = c.members;
    j["ack"] = to_string(c.ack);
    j["transport"] = "tcp";
    j["value_size"] = c.value_size;
    j["lease_ms"] = c.lease_ttl.count();
    j["suspect_ms"] = c.suspect_after.count();
    j["failovers"] = c.failovers;
    j["fault"] = kvdemo::to_string(c.fault);
    j["etcd_members"] = c.etcd.empty() ? c.etcd_members : 0;
    j["etcd_member_killed"] = r.etcd_member_killed;
    j["writes_per_leader"] = c.writes_per_leader;
    j["failover_ms"] = {
        {"p50", p50}, {"p99", p99}, {"max", max}, {"min", min}, {"samples", r.failover_ms}};
    j["acknowledged_writes"] = r.acknowledged;
    j["acknowledged_lost"] = r.lost;
    j["stale_acknowledged"] = r.stale_acknowledged;
    j["epoch_conflicts"] = r.epoch_conflicts;
    j["linearizable"] = {{"ok", lin.linearizable},
                         {"keys", lin.keys},
                         {"operations", lin.operations},
                         {"reads", r.reads},
                         {"explanation", lin.explanation}};
    j["converged"] = r.converged;
    j["verified"] = r.verified;
    j["seconds"] = r.seconds;
    j["machine"] = machine_json(machine);
    if (!write_result(args.json, j)) return 3;
  }
  return r.verified ? 0 : 1;
}

}  // namespace rdmarepl::bench
