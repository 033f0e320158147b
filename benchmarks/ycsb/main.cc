// rdmarepl-ycsb: YCSB core workloads (A, B, C, D, F) against replicas that serve reads.
// A leader and followers run in this process on loopback (TCP or verbs); updates and
// inserts go through the leader's replicate() (latency: until every follower applied them),
// reads through ReadClients to the followers. Prints YCSB-style lines and, with --json, a
// JSON object. docs/benchmarks.md ("YCSB") has the commands and results.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "rdmarepl/core/enum_text.h"
#include "ycsb_run.h"

using namespace rdmarepl;
using namespace rdmarepl::ycsb;
using Json = nlohmann::ordered_json;

namespace {

Json report(const RunOptions& o, const RunResult& r, const std::string& transport) {
  Json j;
  j["workload"] = std::string(1, o.mix.name);
  j["transport"] = transport;
  j["value_bytes"] = o.value_bytes;
  j["threads"] = o.threads;
  j["clients"] = o.clients;
  j["followers"] = o.followers;
  j["records"] = o.record_count;
  j["operations"] = o.operation_count;
  j["runtime_ms"] = r.seconds * 1e3;
  j["throughput_ops"] = r.throughput;
  j["cpu_seconds"] = r.cpu_seconds;
  uint64_t total = 0;
  for (const auto& [_, st] : r.ops) total += st.operations;
  j["cpu_us_per_op"] = total > 0 ? r.cpu_seconds * 1e6 / static_cast<double>(total) : 0.0;
  j["verified"] = r.verified();
  j["verified_reads"] = r.verified_reads;
  j["bad_values"] = r.bad_values;
  j["stale_reads"] = r.stale_reads;
  for (const auto& [name, st] : r.ops) {
    const auto& h = st.latency_ns;
    j["ops"][name] = {{"operations", st.operations},
                      {"failed", st.failed},
                      {"avg_us", h.mean() / 1e3},
                      {"p50_us", static_cast<double>(h.p50()) / 1e3},
                      {"p95_us", static_cast<double>(h.percentile(0.95)) / 1e3},
                      {"p99_us", static_cast<double>(h.p99()) / 1e3},
                      {"p999_us", static_cast<double>(h.p999()) / 1e3}};
  }
  return j;
}

void print(const Json& j) {
  fmt::print("[OVERALL], Workload, {}, Transport, {}, ValueBytes, {}\n",
             j["workload"].get<std::string>(), j["transport"].get<std::string>(),
             j["value_bytes"].get<uint32_t>());
  fmt::print("[OVERALL], RunTime(ms), {:.0f}\n", j["runtime_ms"].get<double>());
  fmt::print("[OVERALL], Throughput(ops/sec), {:.0f}\n", j["throughput_ops"].get<double>());
  fmt::print("[CPU], MicrosecondsPerOperation, {:.1f}\n", j["cpu_us_per_op"].get<double>());
  for (const auto& [name, st] : j["ops"].items()) {
    fmt::print("[{}], Operations, {}\n", name, st["operations"].get<uint64_t>());
    fmt::print("[{}], Failed, {}\n", name, st["failed"].get<uint64_t>());
    for (const char* f : {"avg_us", "p50_us", "p95_us", "p99_us", "p999_us"})
      fmt::print("[{}], {}, {:.1f}\n", name, f, st[f].get<double>());
  }
  fmt::print("[VERIFIED], {}, reads {}, bad {}, stale {}\n", j["verified"].get<bool>(),
             j["verified_reads"].get<uint64_t>(), j["bad_values"].get<uint64_t>(),
             j["stale_reads"].get<uint64_t>());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmarepl-ycsb: YCSB core workloads against rdmarepl replicas serving reads"};
  RunOptions o;
  std::string workloads = "C", transport = "tcp", consistency = "any", json_out, dist;
  app.add_option("--workload", workloads, "workload letters to run in turn: A B C D F (e.g. AC)");
  app.add_option("--recordcount", o.record_count, "records loaded before the run");
  app.add_option("--operationcount", o.operation_count, "operations of each workload");
  app.add_option("--value", o.value_bytes, "value bytes (e.g. 1024, 4096, 16384)");
  app.add_option("--threads", o.threads, "client threads")->check(CLI::Range(1u, 256u));
  app.add_option("--clients", o.clients,
                 "ReadClients the threads share (1: every thread's gets are coalesced)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--target", o.target_ops, "target operations per second (0: unthrottled)");
  app.add_option("--followers", o.followers, "followers serving reads")->check(CLI::Range(1u, 8u));
  app.add_option("--transport", transport, "tcp or verbs")->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_option("--consistency", consistency, "any, at_least (own writes) or leader")
      ->check(CLI::IsMember({"any", "at_least"}));
  app.add_option("--distribution", dist, "override: zipfian, uniform or latest")
      ->check(CLI::IsMember({"zipfian", "uniform", "latest"}));
  app.add_option("--seed", o.seed, "random seed");
  std::string polling = "blocking";
  app.add_option("--polling", polling,
                 "how the channels' pollers wait: busy, sleep (every 20 us) or blocking (in the "
                 "transport; default)")
      ->check(CLI::IsMember({"busy", "sleep", "blocking"}));
  app.add_option("--json", json_out, "also write the results as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);
  o.polling = *from_string<replication::PollingMode>(polling);
  o.transport =
      transport == "verbs" ? transport::TransportKind::verbs : transport::TransportKind::tcp;
  o.consistency = consistency == "at_least" ? reads::Consistency::Kind::at_least
                                            : reads::Consistency::Kind::any;
  Json all = Json::array();
  bool verified = true;
  for (char w : workloads) {
    if (!core_workload(static_cast<char>(std::toupper(w)), o.mix)) {
      fmt::print(stderr, "rdmarepl-ycsb: unknown workload '{}'; use A, B, C, D or F\n", w);
      return 2;
    }
    if (dist == "uniform") o.mix.distribution = Distribution::uniform;
    if (dist == "zipfian") o.mix.distribution = Distribution::zipfian;
    if (dist == "latest") o.mix.distribution = Distribution::latest;
    auto r = run(o);
    if (!r.ok()) {
      fmt::print(stderr, "rdmarepl-ycsb: workload {}: {}\n", w, r.error().message());
      return 1;
    }
    Json j = report(o, *r, transport);
    print(j);
    verified = verified && r->verified();
    all.push_back(j);
  }
  if (!json_out.empty()) std::ofstream(json_out) << all.dump(2) << "\n";
  return verified ? 0 : 3;
}
