// The metrics field table: it covers every field of the snapshot, in order, with the right
// member, and docs/replication.md lists every metric it names.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "rdmarepl/replication/channel_metrics.h"

using namespace rdmarepl;
using namespace rdmarepl::replication;

TEST_CASE("metric fields: names are unique and snapshot() copies each field", "[metrics]") {
  std::set<std::string_view> names;
  for (const auto& f : kMetricFields) CHECK(names.insert(f.name).second);
  for (const auto& f : kHistogramFields) CHECK(names.insert(f.name).second);

  ChannelMetrics live;
  uint64_t next = 100;
#define RDMAREPL_METRIC_(name, kind, unit, help) live.name.store(next++);
  RDMAREPL_CHANNEL_METRICS(RDMAREPL_METRIC_)
#undef RDMAREPL_METRIC_
  uint64_t recorded = 1;
#define RDMAREPL_HISTOGRAM_(name, unit, help) live.name.record(1, recorded++);
  RDMAREPL_CHANNEL_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
#undef RDMAREPL_HISTOGRAM_

  MetricsSnapshot s = live.snapshot();
  // The per-shard histograms have no live member: the engine fills one entry per shard and
  // the channel-wide field is their sum (two shards here, recorded-1 and 1 values).
  for (const auto& f : kShardHistogramFields) {
    metrics::Histogram a, b;
    a.record(1, recorded - 1);
    b.record(1);
    s.*f.shards = {a.snapshot(), b.snapshot()};
    ++recorded;
  }
  sum_shard_histograms(s);
  uint64_t want = 100;
  for (const auto& f : kMetricFields) {
    INFO(f.name);
    CHECK(s.*f.member == want++);
    CHECK_FALSE(f.unit.empty());
    CHECK_FALSE(f.help.empty());
  }
  CHECK(want == next);  // the table has every scalar field
  uint64_t count = 1;
  for (const auto& f : kHistogramFields) {
    INFO(f.name);
    CHECK((s.*f.member).count == count++);
  }
  CHECK(count == recorded);
  CHECK(s.records_replicated == 100);  // the table starts where the struct starts
}

TEST_CASE("metric fields: a per-shard histogram's total is the sum of its shards", "[metrics]") {
  metrics::Histogram a, b, whole;
  for (uint64_t v : {3, 900, 70'000}) {
    a.record(v);
    whole.record(v);
  }
  for (uint64_t v : {12, 1'000'000}) {
    b.record(v, 2);
    whole.record(v, 2);
  }
  MetricsSnapshot s;
  s.shard_ack_latency_ns = {a.snapshot(), {}, b.snapshot()};
  sum_shard_histograms(s);
  const auto want = whole.snapshot();
  CHECK(s.ack_latency_ns.count == 7);
  CHECK(s.ack_latency_ns.count == want.count);
  CHECK(s.ack_latency_ns.sum == want.sum);
  CHECK(s.ack_latency_ns.max == 1'000'000);
  CHECK(s.ack_latency_ns.buckets == want.buckets);
  CHECK(s.ack_latency_ns.p50() == want.p50());
  s.shard_ack_latency_ns.clear();  // a follower: no shards, an empty total
  sum_shard_histograms(s);
  CHECK(s.ack_latency_ns.count == 0);
}

TEST_CASE("metric fields: docs/replication.md lists every metric", "[metrics]") {
  std::ifstream in(RDMAREPL_DOCS_DIR "/replication.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto section = doc.find("## Metrics");
  REQUIRE(section != std::string::npos);
  const std::string metrics = doc.substr(section, doc.find("\n## ", section + 1) - section);
  for (const auto& f : kMetricFields) {
    INFO(f.name);
    CHECK(metrics.find("| `" + std::string(f.name) + "` | " + std::string(to_string(f.kind))) !=
          std::string::npos);
  }
  for (const auto& f : kHistogramFields) {
    INFO(f.name);
    CHECK(metrics.find("| `" + std::string(f.name) + "` | histogram") != std::string::npos);
  }
}
