// The results of one YCSB run (report.h).
#include "report.h"

#include <fmt/format.h>

#include <cstdint>

namespace rdmarepl::ycsb {

Json report(const RunOptions& o, const RunResult& r, const std::string& transport) {
  Json j;
  j["workload"] = std::string(1, o.mix.name);
  j["transport"] = transport;
  j["tuning"] = o.tuning;
  j["mode"] = o.peers.empty() ? "in-process" : "remote";
  j["value_bytes"] = o.value_bytes;
  j["threads"] = o.threads;
  j["clients"] = o.inflight > 1 ? o.threads : o.clients;
  j["inflight_per_thread"] = o.inflight;
  j["followers"] = o.peers.empty() ? o.followers : static_cast<uint32_t>(o.peers.size());
  j["records"] = o.record_count;
  j["operations"] = o.operation_count;
  j["runtime_ms"] = r.seconds * 1e3;
  j["throughput_ops"] = r.throughput;
  j["cpu_seconds"] = r.cpu_seconds;
  j["cpu_seconds_client"] = r.cpu_seconds_local;
  j["cpu_seconds_followers"] = r.cpu_seconds_remote;
  j["cpu_processes"] = r.processes;
  uint64_t total = 0;
  for (const auto& [_, st] : r.ops) total += st.operations;
  j["cpu_us_per_op"] = total > 0 ? r.cpu_seconds * 1e6 / static_cast<double>(total) : 0.0;
  const tuning::Knobs& k = r.leader_knobs;
  j["leader_knobs"] = {{"batch_bytes", k.batch_bytes},
                       {"flush_delay_us", k.flush_delay_us},
                       {"carriers", k.shards},
                       {"poll_mode", std::string(to_string(k.poll_mode))},
                       {"poll_interval_us", k.poll_interval_us}};
  j["verified"] = r.verified();
  j["verified_reads"] = r.verified_reads;
  j["bad_values"] = r.bad_values;
  j["stale_reads"] = r.stale_reads;
  for (const auto& [name, st] : r.ops) {
    const LatencySummary& h = st.latency;
    j["ops"][name] = {{"operations", st.operations},
                      {"failed", st.failed},
                      {"avg_us", h.mean_ns / 1e3},
                      {"p50_us", static_cast<double>(h.p50_ns) / 1e3},
                      {"p95_us", static_cast<double>(h.p95_ns) / 1e3},
                      {"p99_us", static_cast<double>(h.p99_ns) / 1e3},
                      {"p999_us", static_cast<double>(h.p999_ns) / 1e3},
                      {"max_us", static_cast<double>(h.max_ns) / 1e3}};
  }
  return j;
}

void print(const Json& j) {
  fmt::print("[OVERALL], Workload, {}, Transport, {}, Tuning, {}, ValueBytes, {}\n",
             j["workload"].get<std::string>(), j["transport"].get<std::string>(),
             j["tuning"].get<bool>() ? "xgboost" : "off", j["value_bytes"].get<uint32_t>());
  fmt::print("[OVERALL], RunTime(ms), {:.0f}\n", j["runtime_ms"].get<double>());
  fmt::print("[OVERALL], Throughput(ops/sec), {:.0f}\n", j["throughput_ops"].get<double>());
  fmt::print("[CPU], MicrosecondsPerOperation, {:.1f}, Processes, {}\n",
             j["cpu_us_per_op"].get<double>(), j["cpu_processes"].get<uint32_t>());
  for (const auto& [name, st] : j["ops"].items()) {
    fmt::print("[{}], Operations, {}\n", name, st["operations"].get<uint64_t>());
    fmt::print("[{}], Failed, {}\n", name, st["failed"].get<uint64_t>());
    for (const char* f : {"avg_us", "p50_us", "p95_us", "p99_us", "p999_us"})
      fmt::print("[{}], {}, {:.1f}\n", name, f, st[f].get<double>());
  }
  const auto& k = j["leader_knobs"];
  fmt::print("[LEADER], Knobs, batch_bytes {}, flush_delay_us {}, carriers {}, poll {} {} us\n",
             k["batch_bytes"].get<uint64_t>(), k["flush_delay_us"].get<uint32_t>(),
             k["carriers"].get<uint32_t>(), k["poll_mode"].get<std::string>(),
             k["poll_interval_us"].get<uint32_t>());
  fmt::print("[VERIFIED], {}, reads {}, bad {}, stale {}\n", j["verified"].get<bool>(),
             j["verified_reads"].get<uint64_t>(), j["bad_values"].get<uint64_t>(),
             j["stale_reads"].get<uint64_t>());
}

}  // namespace rdmarepl::ycsb
