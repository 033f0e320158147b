// The metrics field table: it covers every field of the snapshot, in order, with the right
// member, and docs/replication.md lists every metric it names.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "rdmarepl/replication/channel_metrics.h"

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

  const MetricsSnapshot s = live.snapshot();
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
