// rdmarepl-bench --group-writes N (failover_bench.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "failover_bench.h"
#include "failover_group.h"
#include "machine.h"
#include "rdmarepl/core/clock.h"
#include "result_file.h"

namespace rdmarepl::bench {

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using kvdemo::Group;

struct Sample {
  double writes_per_sec = 0;
  double cpu_us_per_write = 0;  // over the members
  double etcd_requests_per_sec = 0;
  double etcd_cpu_percent = 0;  // of one core
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Result<double> group_cpu(Group& g) {
  double sum = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    auto r = g.ask(i, "cpu", "cpu ", 10s);
    if (!r) return std::move(r).error();
    sum += std::stod(kvdemo::field(*r, "seconds"));
  }
  return sum;
}

// etcd's traffic over [from, to] (ns on the monotonic clock).
Sample traffic(const kvdemo::EtcdTraffic& a, const kvdemo::EtcdTraffic& b, uint64_t from,
               uint64_t to) {
  const double s = static_cast<double>(to - from) / 1e9;
  Sample out;
  out.etcd_requests_per_sec = static_cast<double>(b.requests - a.requests) / s;
  out.etcd_cpu_percent = (b.cpu_seconds - a.cpu_seconds) / s * 100;
  return out;
}

Result<uint64_t> burst(Group& g, size_t leader, uint64_t first, uint64_t count) {
  auto r = g.ask(leader, fmt::format("burst first={} count={}", first, count), "burst ", 300s);
  if (!r) return std::move(r).error();
  if (kvdemo::number(*r, "count", 0) != count)
    return Error(Errc::io_error, "the leader's burst fell short: " + *r);
  return kvdemo::number(*r, "ns", 0);
}

// One round of one variant: a fresh group, a warm-up burst, the timed burst; for the group
// also an idle window of etcd traffic.
Result<std::pair<Sample, Sample>> one_run(const kvdemo::FailoverConfig& c, const fs::path& dir,
                                          const std::string& url, pid_t etcd_pid, bool plain,
                                          uint64_t writes) {
  Group g(c, dir, url,
          plain ? std::vector<std::string>{"--plain", "1"} : std::vector<std::string>{});
  Sample s, idle;
  Status st = g.init();
  if (st) {
    auto run = [&]() -> Status {
      auto l = g.leader(Deadline::after(60s));
      if (!l) return std::move(l).error();
      const uint64_t warm = std::max<uint64_t>(writes / 10, 1000);
      if (auto w = burst(g, *l, 0, warm); !w) return std::move(w).error();
      auto cpu0 = group_cpu(g);
      auto e0 = kvdemo::etcd_traffic(url, etcd_pid);
      if (!cpu0 || !e0) return Error(Errc::io_error, "cannot read the CPU or etcd's metrics");
      const uint64_t t0 = mono_ns();
      auto ns = burst(g, *l, warm, writes);
      if (!ns) return std::move(ns).error();
      const uint64_t t1 = mono_ns();
      auto cpu1 = group_cpu(g);
      auto e1 = kvdemo::etcd_traffic(url, etcd_pid);
      if (!cpu1 || !e1) return Error(Errc::io_error, "cannot read the CPU or etcd's metrics");
      s = traffic(*e0, *e1, t0, t1);
      s.writes_per_sec = static_cast<double>(writes) / (static_cast<double>(*ns) / 1e9);
      s.cpu_us_per_write = (*cpu1 - *cpu0) / static_cast<double>(writes) * 1e6;
      std::this_thread::sleep_for(2s);
      auto e2 = kvdemo::etcd_traffic(url, etcd_pid);
      if (!e2) return std::move(e2).error();
      idle = traffic(*e1, *e2, t1, mono_ns());
      return ok_status();
    };
    st = run();
  }
  g.quit();
  if (!st) return std::move(st).error();
  return std::pair{s, idle};
}

}  // namespace

int run_group_bench(const BenchArgs& args) {
  kvdemo::FailoverConfig c;
  c.members = args.members;
  c.value_size = args.config.workload.value_min;
  c.ack = args.config.ack;
  c.lease_ttl = std::chrono::milliseconds(args.lease_ms);
  c.suspect_after = std::chrono::milliseconds(args.suspect_ms);
  const auto machine = machine_info();
  fmt::print(
      "rdmarepl-bench --group-writes: {} writes of {} B, ack={}, by a group of {} members "
      "(through etcd) and by the same processes as a plain channel, {} interleaved rounds, "
      "on {} cores ({})\n",
      args.group_writes, c.value_size, to_string(c.ack), c.members, args.group_rounds,
      machine.cores, machine.cpu_model);
  std::fflush(stdout);
  const fs::path root = fs::temp_directory_path() / fmt::format("rdmarepl-group-{}", ::getpid());
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  std::string url;
  auto etcd = kvdemo::start_etcd(root, 1, url);
  if (!etcd) {
    fmt::print(stderr, "rdmarepl-bench: {}\n", etcd.error().to_string());
    return 3;
  }
  std::vector<Sample> group, plain, idle;
  std::vector<double> ratios;
  for (uint32_t r = 0; r < args.group_rounds; ++r) {
    Sample got[2];
    for (int k = 0; k < 2; ++k) {
      const bool is_plain = (r + k) % 2 == 1;  // alternate which variant goes first
      const fs::path dir = root / fmt::format("{}-{}", is_plain ? "plain" : "group", r);
      auto run = one_run(c, dir, url, etcd->front().pid(), is_plain, args.group_writes);
      fs::remove_all(dir, ec);
      if (!run) {
        fmt::print(stderr, "rdmarepl-bench: round {} ({}) failed: {}\n", r + 1,
                   is_plain ? "plain" : "group", run.error().to_string());
        return 3;
      }
      got[is_plain ? 1 : 0] = run->first;
      if (!is_plain) idle.push_back(run->second);
      if (!args.quiet)
        fmt::print("  round {} {:<6} {:>9.0f} writes/s, {:.2f} CPU-us/write, etcd {:.1f} req/s\n",
                   r + 1, is_plain ? "plain" : "group", run->first.writes_per_sec,
                   run->first.cpu_us_per_write, run->first.etcd_requests_per_sec);
    }
    group.push_back(got[0]);
    plain.push_back(got[1]);
    ratios.push_back(got[0].writes_per_sec / got[1].writes_per_sec);
  }
  etcd->front().kill_and_reap();
  fs::remove_all(root, ec);

  auto col = [](const std::vector<Sample>& v, double Sample::*f) {
    std::vector<double> out;
    for (const auto& s : v) out.push_back(s.*f);
    return out;
  };
  auto row = [&](const char* name, const std::vector<Sample>& v) {
    auto w = col(v, &Sample::writes_per_sec);
    fmt::print("{:<8} {:>10.0f} {:>10.0f} {:>10.0f} {:>12.2f} {:>12.1f}\n", name, median(w),
               *std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()),
               median(col(v, &Sample::cpu_us_per_write)),
               median(col(v, &Sample::etcd_requests_per_sec)));
  };
  fmt::print("\n{:<8} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "variant", "writes/s", "min", "max",
             "CPU-us/write", "etcd req/s");
  row("group", group);
  row("plain", plain);
  const double ratio = median(ratios);
  fmt::print("group / plain: {:.3f} (median of {} rounds; min {:.3f}, max {:.3f})\n", ratio,
             ratios.size(), *std::min_element(ratios.begin(), ratios.end()),
             *std::max_element(ratios.begin(), ratios.end()));
  fmt::print(
      "etcd while the group writes: {:.1f} requests/s, {:.1f}% of a core; idle: {:.1f} "
      "requests/s, {:.1f}% of a core\n",
      median(col(group, &Sample::etcd_requests_per_sec)),
      median(col(group, &Sample::etcd_cpu_percent)),
      median(col(idle, &Sample::etcd_requests_per_sec)),
      median(col(idle, &Sample::etcd_cpu_percent)));
  if (!args.json.empty()) {
    nlohmann::ordered_json j;
    j["mode"] = "group_throughput";
    j["members"] = c.members;
    j["ack"] = to_string(c.ack);
    j["value_size"] = c.value_size;
    j["writes"] = args.group_writes;
    j["rounds"] = args.group_rounds;
    auto side = [&](const std::vector<Sample>& v) {
      return nlohmann::ordered_json{
          {"writes_per_sec", col(v, &Sample::writes_per_sec)},
          {"cpu_us_per_write", col(v, &Sample::cpu_us_per_write)},
          {"etcd_requests_per_sec", col(v, &Sample::etcd_requests_per_sec)},
          {"etcd_cpu_percent", col(v, &Sample::etcd_cpu_percent)}};
    };
    j["group"] = side(group);
    j["plain"] = side(plain);
    j["idle"] = side(idle);
    j["ratio"] = {{"median", ratio}, {"samples", ratios}};
    j["machine"] = machine_json(machine);
    if (!write_result(args.json, j)) return 3;
  }
  return 0;
}

}  // namespace rdmarepl::bench
