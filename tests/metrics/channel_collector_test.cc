#include "rdmarepl/metrics/prometheus/channel_collector.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "scrape_text.h"

using namespace rdmarepl;
using metrics::ChannelCollector;
using testing::scrape;

namespace {

replication::MetricsSnapshot sample_snapshot() {
  replication::MetricsSnapshot m;
  uint64_t v = 3;
  for (const auto& f : replication::kMetricFields) m.*f.member = v += 7;
  m.followers = 2;
  m.follower_lag = {5, 0};
  m.follower_lag_bytes = {4096, 0};
  m.follower_connected = {true, false};
  m.shard_seq = {10, 0, 7};
  m.shard_lag = {3, 0, 2};
  m.shard_records = {10, 0, 7};
  m.shard_bytes = {1000, 0, 770};
  // Entry shard * 2 + follower: follower 0 lags 3 records on shard 0 and 2 on shard 2.
  m.link_lag = {3, 0, 0, 0, 2, 0};
  m.link_lag_bytes = {2048, 0, 0, 0, 2048, 0};
  m.link_batches_sent = {40, 41, 0, 0, 12, 13};
  m.link_credit_stalls = {2, 0, 0, 0, 0, 1};
  m.link_reconnects = {0, 1, 0, 1, 0, 1};
  m.link_catchup_bytes = {0, 65536, 0, 0, 0, 4096};
  m.shard_batches = {4, 0, 3};
  m.shard_window_stalls = {0, 0, 5};
  // Commit latency per shard (shard 1 saw none); the channel's is their sum.
  metrics::Histogram lat0, lat2;
  for (uint64_t ns : {900, 2'000, 40'000}) lat0.record(ns);
  for (uint64_t ns : {2'100, 3'000'000}) lat2.record(ns);
  m.shard_ack_latency_ns = {lat0.snapshot(), {}, lat2.snapshot()};
  replication::sum_shard_histograms(m);
  metrics::Histogram bytes;
  bytes.record(65536, 4);
  m.batch_bytes = bytes.snapshot();
  return m;
}

ChannelCollector collector(const replication::MetricsSnapshot& m,
                           const std::string& role = "leader") {
  metrics::ChannelSource s;
  s.metrics = [m] { return m; };
  s.knobs = [] {
    tuning::Knobs k;
    k.batch_bytes = 131072;
    k.flush_delay_us = 40;
    k.poll_mode = tuning::PollingMode::sleep;
    return k;
  };
  s.role = role;
  s.node = "node-a";
  return ChannelCollector(s);
}

const std::string kLabels = R"(role="leader",node="node-a")";

}  // namespace

TEST_CASE("every field of the metric table is exported with its value and labels") {
  auto m = sample_snapshot();
  std::string text;
  auto samples = scrape(collector(m), &text);
  INFO(text);
  for (const auto& f : replication::kMetricFields) {
    const std::string series = ChannelCollector::exported_name(f) + "{" + kLabels + "}";
    INFO(series);
    REQUIRE(samples.count(series) == 1);
    CHECK(samples[series] == static_cast<double>(m.*f.member));
    const bool counter = f.kind == replication::MetricKind::counter;
    CHECK((ChannelCollector::exported_name(f).rfind("_total") != std::string::npos) == counter);
    CHECK(text.find("# TYPE " + ChannelCollector::exported_name(f) +
                    (counter ? " counter" : " gauge")) != std::string::npos);
  }
  CHECK(samples.count("rdmarepl_replicated_bytes_total{" + kLabels + "}") == 1);
  CHECK(samples.count("rdmarepl_reconnects_total{" + kLabels + "}") == 1);
}

TEST_CASE("per-follower lag and connection state carry a follower label") {
  auto samples = scrape(collector(sample_snapshot()));
  CHECK(samples["rdmarepl_follower_lag_records{" + kLabels + ",follower=\"0\"}"] == 5);
  CHECK(samples["rdmarepl_follower_lag_records{" + kLabels + ",follower=\"1\"}"] == 0);
  CHECK(samples["rdmarepl_follower_connected{" + kLabels + ",follower=\"0\"}"] == 1);
  CHECK(samples["rdmarepl_follower_connected{" + kLabels + ",follower=\"1\"}"] == 0);
  CHECK(samples.count("rdmarepl_follower_lag_records{" + kLabels + ",follower=\"2\"}") == 0);
  CHECK(samples["rdmarepl_follower_lag_bytes{" + kLabels + ",follower=\"0\"}"] == 4096);
  CHECK(samples["rdmarepl_follower_lag_bytes{" + kLabels + ",follower=\"1\"}"] == 0);
}

TEST_CASE("per-shard seq and lag carry a shard label and a follower has no shard lag") {
  auto m = sample_snapshot();
  auto samples = scrape(collector(m));
  CHECK(samples["rdmarepl_shard_last_seq{" + kLabels + ",shard=\"0\"}"] == 10);
  CHECK(samples["rdmarepl_shard_last_seq{" + kLabels + ",shard=\"2\"}"] == 7);
  CHECK(samples["rdmarepl_shard_lag_records{" + kLabels + ",shard=\"0\"}"] == 3);
  CHECK(samples["rdmarepl_shard_lag_records{" + kLabels + ",shard=\"1\"}"] == 0);
  CHECK(samples.count("rdmarepl_shard_last_seq{" + kLabels + ",shard=\"3\"}") == 0);
  m.shard_lag.clear();
  std::string text;
  samples = scrape(collector(m), &text);
  CHECK(samples["rdmarepl_shard_last_seq{" + kLabels + ",shard=\"1\"}"] == 0);
  CHECK(text.find("rdmarepl_shard_lag_records") == std::string::npos);
}

TEST_CASE("a leader exports records and bytes per shard and lag per follower and shard") {
  std::string text;
  auto samples = scrape(collector(sample_snapshot()), &text);
  INFO(text);
  const auto at = [&](const std::string& name, const std::string& extra) {
    const std::string series = name + "{" + kLabels + "," + extra + "}";
    INFO(series);
    REQUIRE(samples.count(series) == 1);
    return samples[series];
  };
  CHECK(at("rdmarepl_shard_records_replicated_total", "shard=\"0\"") == 10);
  CHECK(at("rdmarepl_shard_records_replicated_total", "shard=\"1\"") == 0);
  CHECK(at("rdmarepl_shard_records_replicated_total", "shard=\"2\"") == 7);
  CHECK(at("rdmarepl_shard_replicated_bytes_total", "shard=\"0\"") == 1000);
  CHECK(at("rdmarepl_shard_replicated_bytes_total", "shard=\"2\"") == 770);
  CHECK(text.find("# TYPE rdmarepl_shard_records_replicated_total counter") != std::string::npos);
  CHECK(text.find("rdmarepl_shard_records_applied_total") == std::string::npos);
  const std::string f0 = "follower=\"0\",shard=", f1 = "follower=\"1\",shard=";
  CHECK(at("rdmarepl_follower_shard_lag_records", f0 + "\"0\"") == 3);
  CHECK(at("rdmarepl_follower_shard_lag_records", f0 + "\"1\"") == 0);
  CHECK(at("rdmarepl_follower_shard_lag_records", f0 + "\"2\"") == 2);
  CHECK(at("rdmarepl_follower_shard_lag_bytes", f0 + "\"0\"") == 2048);
  CHECK(at("rdmarepl_follower_shard_lag_bytes", f0 + "\"2\"") == 2048);
  for (const char* shard : {"\"0\"", "\"1\"", "\"2\""}) {
    CHECK(at("rdmarepl_follower_shard_lag_records", f1 + shard) == 0);
    CHECK(at("rdmarepl_follower_shard_lag_bytes", f1 + shard) == 0);
  }
  // Batches, stalls and reconnects per link: entry shard * 2 + follower.
  CHECK(at("rdmarepl_follower_shard_batches_sent_total", f0 + "\"0\"") == 40);
  CHECK(at("rdmarepl_follower_shard_batches_sent_total", f1 + "\"0\"") == 41);
  CHECK(at("rdmarepl_follower_shard_batches_sent_total", f1 + "\"2\"") == 13);
  CHECK(at("rdmarepl_follower_shard_credit_stalls_total", f0 + "\"0\"") == 2);
  CHECK(at("rdmarepl_follower_shard_credit_stalls_total", f1 + "\"2\"") == 1);
  CHECK(at("rdmarepl_follower_shard_credit_stalls_total", f1 + "\"0\"") == 0);
  CHECK(at("rdmarepl_follower_shard_reconnects_total", f1 + "\"1\"") == 1);
  CHECK(at("rdmarepl_follower_shard_reconnects_total", f0 + "\"1\"") == 0);
  CHECK(at("rdmarepl_follower_shard_catchup_bytes_total", f1 + "\"0\"") == 65536);
  CHECK(at("rdmarepl_follower_shard_catchup_bytes_total", f1 + "\"2\"") == 4096);
  CHECK(at("rdmarepl_follower_shard_catchup_bytes_total", f0 + "\"2\"") == 0);
  CHECK(text.find("# TYPE rdmarepl_follower_shard_batches_sent_total counter") !=
        std::string::npos);
  // 2 followers x 3 shards, no more.
  size_t n = 0;
  for (const auto& [series, v] : samples)
    if (series.rfind("rdmarepl_follower_shard_lag_records{", 0) == 0) ++n;
  CHECK(n == 6);
}

TEST_CASE("a follower exports records and bytes applied per shard and no lag") {
  auto m = sample_snapshot();
  m.shard_lag.clear();
  m.link_lag.clear();
  m.link_lag_bytes.clear();
  m.link_batches_sent.clear();
  m.link_credit_stalls.clear();
  m.link_reconnects.clear();
  m.shard_window_stalls.clear();
  m.shard_ack_latency_ns.clear();
  std::string text;
  auto samples = scrape(collector(m, "follower"), &text);
  INFO(text);
  const std::string l = R"(role="follower",node="node-a",shard=)";
  CHECK(samples["rdmarepl_shard_records_applied_total{" + l + "\"0\"}"] == 10);
  CHECK(samples["rdmarepl_shard_records_applied_total{" + l + "\"2\"}"] == 7);
  CHECK(samples["rdmarepl_shard_applied_bytes_total{" + l + "\"2\"}"] == 770);
  CHECK(text.find("rdmarepl_shard_records_replicated_total") == std::string::npos);
  CHECK(text.find("rdmarepl_follower_shard_lag") == std::string::npos);
  CHECK(text.find("rdmarepl_follower_shard_batches_sent_total") == std::string::npos);
  CHECK(samples["rdmarepl_shard_batches_applied_total{" + l + "\"0\"}"] == 4);
  CHECK(samples["rdmarepl_shard_batches_applied_total{" + l + "\"2\"}"] == 3);
  CHECK(text.find("rdmarepl_shard_batches_sealed_total") == std::string::npos);
  CHECK(text.find("rdmarepl_shard_window_stalls_total") == std::string::npos);
  CHECK(text.find("rdmarepl_shard_ack_latency_seconds") == std::string::npos);
}

TEST_CASE("a leader exports batches sealed and window stalls per shard") {
  std::string text;
  auto samples = scrape(collector(sample_snapshot()), &text);
  INFO(text);
  const std::string l = kLabels + ",shard=";
  CHECK(samples["rdmarepl_shard_batches_sealed_total{" + l + "\"0\"}"] == 4);
  CHECK(samples["rdmarepl_shard_batches_sealed_total{" + l + "\"1\"}"] == 0);
  CHECK(samples["rdmarepl_shard_batches_sealed_total{" + l + "\"2\"}"] == 3);
  CHECK(samples["rdmarepl_shard_window_stalls_total{" + l + "\"2\"}"] == 5);
  CHECK(samples.count("rdmarepl_shard_window_stalls_total{" + l + "\"1\"}") == 1);
  CHECK(text.find("# TYPE rdmarepl_shard_window_stalls_total counter") != std::string::npos);
  CHECK(text.find("rdmarepl_shard_batches_applied_total") == std::string::npos);
}

TEST_CASE("the commit latency is a histogram per shard whose counts add up to the channel's") {
  std::string text;
  auto samples = scrape(collector(sample_snapshot()), &text);
  INFO(text);
  const std::string lat = "rdmarepl_shard_ack_latency_seconds";
  const std::string l = kLabels + ",shard=";
  CHECK(text.find("# TYPE " + lat + " histogram") != std::string::npos);
  CHECK(samples[lat + "_count{" + l + "\"0\"}"] == 3);
  CHECK(samples[lat + "_count{" + l + "\"1\"}"] == 0);
  CHECK(samples[lat + "_count{" + l + "\"2\"}"] == 2);
  CHECK(samples[lat + "_sum{" + l + "\"2\"}"] == Approx(3'002'100e-9));
  // 2047 ns: shard 0 holds 900 and 2000; shard 2's 2100 is above.
  CHECK(samples[lat + "_bucket{" + l + "\"0\",le=\"2.047e-06\"}"] == 2);
  CHECK(samples[lat + "_bucket{" + l + "\"2\",le=\"2.047e-06\"}"] == 0);
  CHECK(samples[lat + "_bucket{" + l + "\"2\",le=\"+Inf\"}"] == 2);
  // Every bucket of the channel-wide histogram is the sum of the shards' same bucket.
  size_t buckets = 0;
  const std::string whole = "rdmarepl_ack_latency_seconds_bucket{" + kLabels + ",le=";
  for (const auto& [series, v] : samples) {
    if (series.rfind(whole, 0) != 0) continue;
    const std::string le = series.substr(whole.size());
    double sum = 0;
    for (const char* shard : {"\"0\"", "\"1\"", "\"2\""})
      sum += samples.at(lat + "_bucket{" + l + shard + ",le=" + le);
    INFO(series);
    CHECK(sum == v);
    ++buckets;
  }
  CHECK(buckets > 10);
  CHECK(samples[lat + "_count{" + l + "\"0\"}"] + samples[lat + "_count{" + l + "\"2\"}"] ==
        samples["rdmarepl_ack_latency_seconds_count{" + kLabels + "}"]);
  CHECK(ChannelCollector::exported_name(replication::kShardHistogramFields[0]) == lat);
}

TEST_CASE("histograms are exported in base units with cumulative le buckets") {
  auto samples = scrape(collector(sample_snapshot()));
  const std::string lat = "rdmarepl_ack_latency_seconds";
  CHECK(samples[lat + "_count{" + kLabels + "}"] == 5);
  CHECK(samples[lat + "_sum{" + kLabels + "}"] == Approx(3'045'000e-9));
  // 2047 ns: 900, 2000 (2100 is above); +Inf: all five.
  CHECK(samples[lat + "_bucket{" + kLabels + ",le=\"2.047e-06\"}"] == 2);
  CHECK(samples[lat + "_bucket{" + kLabels + ",le=\"+Inf\"}"] == 5);
  CHECK(samples["rdmarepl_batch_bytes_count{" + kLabels + "}"] == 4);
  CHECK(samples["rdmarepl_batch_bytes_bucket{" + kLabels + ",le=\"65535\"}"] == 0);
  CHECK(samples["rdmarepl_batch_bytes_bucket{" + kLabels + ",le=\"131071\"}"] == 4);
  for (const auto& f : replication::kHistogramFields)
    CHECK(samples.count(ChannelCollector::exported_name(f) + "_count{" + kLabels + "}") == 1);
}

TEST_CASE("the knobs in force are gauges in base units") {
  auto samples = scrape(collector(sample_snapshot()));
  CHECK(samples["rdmarepl_knob_batch_bytes{" + kLabels + "}"] == 131072);
  CHECK(samples["rdmarepl_knob_flush_delay_seconds{" + kLabels + "}"] == Approx(40e-6));
  CHECK(samples["rdmarepl_knob_poll_mode{" + kLabels + ",mode=\"sleep\"}"] == 1);
  CHECK(samples.count("rdmarepl_knob_shards{" + kLabels + "}") == 1);
  CHECK(samples.count("rdmarepl_knob_pool_bytes{" + kLabels + "}") == 1);
}

TEST_CASE("docs/operations.md names every metric the channel collector exports") {
  std::ifstream in(RDMAREPL_DOCS_DIR "/operations.md");
  REQUIRE(in);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* role : {"leader", "follower"})
    for (const auto& family : collector(sample_snapshot(), role).Collect()) {
      INFO(family.name);
      CHECK(doc.find("`" + family.name + "`") != std::string::npos);
    }
}
