#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "rdmarepl/tuning/dataset.h"
#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/synthetic.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;

TEST_CASE("dataset CSV round trip keeps every value, and missing stays missing", "[tuning]") {
  auto data = generate_dataset(50, 3, KnobBounds{});
  data[0].observation.cpu_utilization.reset();
  data[0].observation.device = DeviceRates{};
  std::stringstream ss;
  write_dataset(ss, data);
  auto back = read_dataset(ss, "memory");
  REQUIRE(back.ok());
  REQUIRE(back->size() == data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    float a[kNumFeatures], b[kNumFeatures];
    encode_features(data[i].observation, data[i].observed_under, data[i].knobs, a);
    encode_features((*back)[i].observation, (*back)[i].observed_under, (*back)[i].knobs, b);
    for (size_t f = 0; f < kNumFeatures; ++f) {
      if (std::isnan(a[f])) {
        CHECK(std::isnan(b[f]));
      } else {
        CHECK(a[f] == b[f]);
      }
    }
    CHECK((*back)[i].outcome.bytes_per_s == data[i].outcome.bytes_per_s);
    CHECK((*back)[i].outcome.latency_p99_us == data[i].outcome.latency_p99_us);
    CHECK((*back)[i].knobs == data[i].knobs);
  }
  CHECK_FALSE((*back)[0].observation.cpu_utilization.has_value());
  CHECK_FALSE((*back)[0].observation.device.tx_bytes_per_s.has_value());
}

TEST_CASE("dataset header names features, the measured-only column, then outcomes", "[tuning]") {
  std::string h = dataset_header();
  CHECK(h.rfind("window_s,lat_p50_us,", 0) == 0);
  CHECK(h.find(",dev_rnr_naks_per_s,wal_sync_p99_us,cur_batch_bytes,") != std::string::npos);
  CHECK(h.find(",batch_bytes,flush_delay_us,shards,poll_mode,") != std::string::npos);
  const std::string tail = "pool_bytes,dev_link_utilization,out_bytes_per_s,out_p99_us";
  CHECK(h.substr(h.size() - tail.size()) == tail);
}

TEST_CASE("wal_sync_p99_us and dev_link_utilization round trip, and a dataset without them reads",
          "[tuning]") {
  auto data = generate_dataset(4, 5, KnobBounds{});
  data[0].observation.wal_sync_p99_us = 1234.5;
  data[0].observation.device.link_utilization = 0.25;
  data[1].observation.wal_sync_p99_us.reset();
  data[1].observation.device.link_utilization.reset();
  std::stringstream ss;
  write_dataset(ss, data);
  const std::string text = ss.str();
  auto back = read_dataset(ss, "memory");
  REQUIRE(back.ok());
  REQUIRE(*(*back)[0].observation.wal_sync_p99_us == 1234.5);
  REQUIRE(*(*back)[0].observation.device.link_utilization == 0.25);
  CHECK_FALSE((*back)[1].observation.wal_sync_p99_us.has_value());
  CHECK_FALSE((*back)[1].observation.device.link_utilization.has_value());

  // The same rows without those two columns (a dataset written before they existed).
  std::stringstream old_text;
  std::istringstream lines(text);
  std::string line;
  std::vector<size_t> drop;  // their indices, from the header
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::stringstream cs(line);
    std::string c;
    while (std::getline(cs, c, ',')) cells.push_back(c);
    if (line.back() == ',') cells.emplace_back();
    if (drop.empty()) {
      for (size_t i = 0; i < cells.size(); ++i)
        if (cells[i] == "wal_sync_p99_us" || cells[i] == "dev_link_utilization") drop.push_back(i);
      REQUIRE(drop.size() == 2);
    }
    for (auto i = drop.rbegin(); i != drop.rend(); ++i) cells.erase(cells.begin() + *i);
    for (size_t i = 0; i < cells.size(); ++i) old_text << (i ? "," : "") << cells[i];
    old_text << '\n';
  }
  auto old_back = read_dataset(old_text, "old");
  INFO((old_back.ok() ? std::string() : old_back.error().message()));
  REQUIRE(old_back.ok());
  REQUIRE(old_back->size() == data.size());
  CHECK_FALSE((*old_back)[0].observation.wal_sync_p99_us.has_value());
  CHECK((*old_back)[0].outcome.bytes_per_s == data[0].outcome.bytes_per_s);
}

TEST_CASE("dataset reader: bad input gives file, line and column", "[tuning]") {
  auto data = generate_dataset(3, 1, KnobBounds{});
  std::stringstream ss;
  write_dataset(ss, data);
  std::string text = ss.str();

  SECTION("missing column") {
    std::stringstream in("window_s,lat_p50_us\n1,2\n");
    auto r = read_dataset(in, "x.csv");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("x.csv") && Catch::Contains("lat_p90_us"));
  }
  SECTION("a cell that is not a number") {
    auto pos = text.find('\n') + 1;  // first data row, first cell
    text.replace(pos, text.find(',', pos) - pos, "abc");
    std::stringstream in(text);
    auto r = read_dataset(in, "x.csv");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::corrupt));
    CHECK_THAT(r.error().message(), Catch::Contains("x.csv:2") && Catch::Contains("window_s"));
  }
  SECTION("a truncated row") {
    std::stringstream in(text.substr(0, text.size() - 30));
    auto r = read_dataset(in, "x.csv");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("x.csv:4") && Catch::Contains("cells"));
  }
  SECTION("missing file") {
    auto r = read_dataset("/nonexistent/data.csv");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::not_found));
  }
}

TEST_CASE("synthetic cost model: throughput rises with batch size until the load is met",
          "[tuning]") {
  CostModel m;
  Workload w;
  w.offered_bytes_per_s = 8e9;
  w.value_mean_bytes = 1024;
  Knobs k;
  k.shards = 2;
  k.flush_delay_us = 400;
  double last = 0;
  for (uint64_t b : {8192u, 32768u, 131072u}) {
    k.batch_bytes = b;
    double x = m.simulate(w, k, nullptr).bytes_per_s;
    CHECK(x > last);
    last = x;
  }
  w.offered_bytes_per_s = 1e8;  // light load: batching only adds delay
  k.batch_bytes = 4096;
  double small = m.simulate(w, k, nullptr).latency_p99_us;
  k.batch_bytes = 1 << 20;
  CHECK(m.simulate(w, k, nullptr).latency_p99_us > small);
}
