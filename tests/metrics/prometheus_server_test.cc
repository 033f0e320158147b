// A real Prometheus server scrapes the replicated_kv demo's leader and followers every
// 100 ms through a run with a follower kill and restart; its HTTP API must then show what
// the run did. The Grafana dashboard's every PromQL expression is evaluated against the
// same server. Exits 77 (ctest: skipped) when the prometheus server is not installed.
#define CATCH_CONFIG_RUNNER
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "http_get.h"
#include "prometheus_server.h"

namespace fs = std::filesystem;
using nlohmann::json;
using rdmarepl::testing::free_port_range;
using rdmarepl::testing::PrometheusServer;

namespace {

constexpr uint64_t kRecords = 300'000;
constexpr unsigned kFollowers = 2;
constexpr unsigned kShards = 2;

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One demo run scraped by one Prometheus, shared by the test cases.
struct ScrapedRun {
  std::string dir;
  std::unique_ptr<PrometheusServer> prom;
  double start = 0;
  double end = 0;
  int demo_status = -1;
  std::string demo_log;

  ScrapedRun() {
    dir = (fs::temp_directory_path() / ("rdmarepl-prom-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir + "/wal");
    const uint16_t base = free_port_range(kFollowers + 1);
    REQUIRE(base != 0);
    std::vector<std::string> targets;
    for (unsigned i = 0; i <= kFollowers; ++i)
      targets.push_back("127.0.0.1:" + std::to_string(base + i));
    prom = std::make_unique<PrometheusServer>(dir, targets);
    REQUIRE(prom->wait_scraping(targets.size(), 30));
    start = now_s();
    // At most 64 writes in flight: under ack=all the writer stalls while follower-1 is
    // away (the demo restarts it after a second), so that the scrapes see the lag and a
    // reconnect counter that was 0 before the kill, however fast the machine writes.
    const std::string cmd =
        "timeout 120 " RDMAREPL_DEMO_BIN " --records " + std::to_string(kRecords) +
        " --followers " + std::to_string(kFollowers) + " --shards " + std::to_string(kShards) +
        " --value-size 64-256 --kill-at 0.4 --outstanding 64 --failovers 0 --quiet --linger 3 "
        "--wal-dir " +
        dir + "/wal --durability interval --metrics-port " + std::to_string(base) + " > " + dir +
        "/demo.log 2>&1";
    demo_status = std::system(cmd.c_str());
    end = now_s();
    std::ifstream in(dir + "/demo.log");
    demo_log.assign(std::istreambuf_iterator<char>(in), {});
  }
  ~ScrapedRun() {
    prom.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // The samples of an instant query at the end of the run: labels -> value.
  std::vector<std::pair<json, double>> at_end(const std::string& expr) const {
    std::vector<std::pair<json, double>> out;
    const json data = prom->query(expr, end);
    for (const auto& r : data["result"])
      out.emplace_back(r["metric"], std::stod(r["value"][1].get<std::string>()));
    return out;
  }
  double one_at_end(const std::string& expr) const {
    auto v = at_end(expr);
    INFO(expr);
    REQUIRE(v.size() == 1);
    return v.front().second;
  }
};

bool have_rdma_devices() {
  std::error_code ec;
  return fs::exists("/sys/class/infiniband", ec) && !fs::is_empty("/sys/class/infiniband", ec);
}

ScrapedRun& run() {
  static ScrapedRun r;
  return r;
}

}  // namespace

TEST_CASE("a real Prometheus sees the demo's replication through a follower kill") {
  auto& r = run();
  INFO(r.demo_log);
  REQUIRE(r.demo_status == 0);
  const std::string window = "[10m]";

  // Every target was scraped.
  auto up = r.at_end("max_over_time(up" + window + ")");
  REQUIRE(up.size() == kFollowers + 1);
  for (const auto& [labels, v] : up) CHECK(v == 1);

  const double written = r.one_at_end(
      "last_over_time(rdmarepl_records_replicated_total{role=\"leader\"}" + window + ")");
  CHECK(written == kRecords);

  // Each follower applied every record the leader wrote: follower-1's restarted process
  // replays what its own WAL holds and applies the rest from the leader.
  auto applied = r.at_end(
      "last_over_time(rdmarepl_records_applied_total{role=\"follower\"}" + window +
      ") + last_over_time(rdmarepl_records_recovered_total{role=" + "\"follower\"}" + window + ")");
  REQUIRE(applied.size() == kFollowers);
  for (const auto& [labels, v] : applied) {
    INFO(labels.dump());
    CHECK(v == written);
  }

  // The lag rose while follower-1 was away and returned to 0 for every follower.
  auto lag = r.at_end("last_over_time(rdmarepl_follower_lag_records" + window + ")");
  REQUIRE(lag.size() == kFollowers);
  for (const auto& [labels, v] : lag) {
    INFO(labels.dump());
    CHECK(v == 0);
  }
  CHECK(r.one_at_end("max_over_time(rdmarepl_follower_lag_records{follower=\"0\"}" + window + ")") >
        0);

  // Per follower and shard: the lag in records and bytes rose for follower 0 (the one
  // killed) and every pair is back to 0; the shards' records add up to the writes on the
  // leader and to what each follower applied.
  for (const char* unit : {"records", "bytes"}) {
    const std::string name = std::string("rdmarepl_follower_shard_lag_") + unit;
    auto pairs = r.at_end("last_over_time(" + name + window + ")");
    REQUIRE(pairs.size() == kFollowers * kShards);
    for (const auto& [labels, v] : pairs) {
      INFO(labels.dump());
      CHECK(v == 0);
    }
    CHECK(r.one_at_end("max(max_over_time(" + name + "{follower=\"0\"}" + window + "))") > 0);
  }
  CHECK(r.at_end("last_over_time(rdmarepl_shard_records_replicated_total" + window + ")").size() ==
        kShards);
  CHECK(r.one_at_end("sum(last_over_time(rdmarepl_shard_records_replicated_total" + window +
                     "))") == written);
  auto per_node =
      r.at_end("sum by (node) (last_over_time(rdmarepl_shard_records_applied_total" + window +
               ")) + on (node) last_over_time(rdmarepl_records_recovered_total{" +
               "role=\"follower\"}" + window + ")");
  REQUIRE(per_node.size() == kFollowers);
  for (const auto& [labels, v] : per_node) {
    INFO(labels.dump());
    CHECK(v == written);
  }

  // The reconnect counter was 0 in a scrape before the kill and rose by it.
  CHECK(r.one_at_end("min_over_time(rdmarepl_reconnects_total{role=\"leader\"}" + window + ")") ==
        0);
  CHECK(r.one_at_end("last_over_time(rdmarepl_reconnects_total{role=\"leader\"}" + window + ")") >=
        1);

  // Each follower's read server answered the leader's read-back of 1000 keys (the demo's
  // default --read-keys), follower-1 from its restarted process.
  auto keys_read = r.at_end("last_over_time(rdmarepl_read_keys_total" + window + ")");
  REQUIRE(keys_read.size() == kFollowers);
  for (const auto& [labels, v] : keys_read) {
    INFO(labels.dump());
    CHECK(v == 1000);
  }

  // One latency sample per write.
  CHECK(r.one_at_end("last_over_time(rdmarepl_ack_latency_seconds_count{role=\"leader\"}" + window +
                     ")") == written);
  CHECK(r.one_at_end("last_over_time(rdmarepl_ack_latency_seconds_bucket{role=\"leader\","
                     "le=\"+Inf\"}" +
                     window + ")") == written);
  // Per shard: one histogram each on the leader, whose counts add up to the writes and
  // whose +Inf buckets add up to the channel-wide one.
  auto per_shard = r.at_end(
      "last_over_time(rdmarepl_shard_ack_latency_seconds_count{role=\"leader\"}" + window + ")");
  REQUIRE(per_shard.size() == kShards);
  for (const auto& [labels, v] : per_shard) {
    INFO(labels.dump());
    CHECK(v > 0);
  }
  CHECK(r.one_at_end("sum(last_over_time(rdmarepl_shard_ack_latency_seconds_count{role="
                     "\"leader\"}" +
                     window + "))") == written);
  CHECK(r.one_at_end("sum(last_over_time(rdmarepl_shard_ack_latency_seconds_bucket{role="
                     "\"leader\",le=\"+Inf\"}" +
                     window + "))") == written);
  // Batches per shard: the leader's sealed add up to its channel counter, and each
  // follower applied batches on every shard.
  CHECK(
      r.one_at_end("sum(last_over_time(rdmarepl_shard_batches_sealed_total" + window + "))") ==
      r.one_at_end("last_over_time(rdmarepl_batches_sealed_total{role=\"leader\"}" + window + ")"));
  auto applied_batches =
      r.at_end("last_over_time(rdmarepl_shard_batches_applied_total" + window + ")");
  CHECK(applied_batches.size() == kFollowers * kShards);
  for (const auto& [labels, v] : applied_batches) {
    INFO(labels.dump());
    CHECK(v > 0);
  }
}

// What Grafana would do with docs/grafana/rdmarepl.json: every panel's every expression,
// with the dashboard's variables replaced, over the run's time range.
TEST_CASE("every panel of the Grafana dashboard parses and returns data") {
  auto& r = run();
  REQUIRE(r.demo_status == 0);
  std::ifstream in(RDMAREPL_DASHBOARD);
  REQUIRE(in);
  json dash = json::parse(in);
  json panels = json::array();
  for (const auto& p : dash["panels"]) {
    panels.push_back(p);
    if (p.contains("panels"))
      for (const auto& q : p["panels"]) panels.push_back(q);
  }
  json data = json::object();  // for docs/grafana/render_panels.py
  size_t expressions = 0;
  for (const auto& p : panels) {
    if (!p.contains("targets")) continue;
    for (const auto& t : p["targets"]) {
      std::string expr = t.at("expr").get<std::string>();
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "5s");
      expr = std::regex_replace(expr, std::regex(R"(\$__interval)"), "1s");
      expr = std::regex_replace(expr, std::regex(R"(\$node)"), ".*");
      INFO(p.value("title", "") << ": " << expr);
      json result;
      REQUIRE_NOTHROW(result = r.prom->query_range(expr, r.start, r.end, 1));
      // The RNIC's counters exist only where RDMA devices do (not on most CI hosts).
      if (expr.find("rdmarepl_rnic_") == std::string::npos || have_rdma_devices())
        CHECK_FALSE(result["result"].empty());
      data[p.value("title", "")][t.value("legendFormat", expr)] = result["result"];
      ++expressions;
    }
  }
  CHECK(expressions >= 7);
  if (const char* out = std::getenv("RDMAREPL_PANEL_DATA")) {
    std::ofstream(out) << json{{"start", r.start}, {"end", r.end}, {"panels", data}}.dump();
  }
}

int main(int argc, char** argv) {
  std::srand(static_cast<unsigned>(::getpid()));
  if (PrometheusServer::binary().empty()) {
    std::printf(
        "skipped: no prometheus server (/usr/bin/prometheus or $PROMETHEUS_BIN); "
        "install the Debian package prometheus (scripts/setup does)\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
