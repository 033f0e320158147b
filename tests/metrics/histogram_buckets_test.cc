#include "rdmarepl/metrics/prometheus/histogram_buckets.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using rdmarepl::metrics::Histogram;
using rdmarepl::metrics::kPrometheusBucketPowers;
using rdmarepl::metrics::to_prometheus;

TEST_CASE("prometheus buckets are the exact cumulative counts of the internal histogram") {
  Histogram h;
  std::vector<uint64_t> values{0, 1, 2, 3, 7, 8, 1023, 1024, 1025, uint64_t{1} << 41};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) values.push_back(rng() % 5'000'000);
  for (auto v : values) h.record(v);
  auto p = to_prometheus(h.snapshot(), 1.0);

  REQUIRE(p.bucket.size() == kPrometheusBucketPowers + 1);
  CHECK(p.sample_count == values.size());
  for (size_t i = 0; i + 1 < p.bucket.size(); ++i) {
    const double le = p.bucket[i].upper_bound;
    CHECK(le == static_cast<double>((uint64_t{1} << (i + 1)) - 1));
    uint64_t expect = 0;
    for (auto v : values) expect += static_cast<double>(v) <= le ? 1 : 0;
    INFO("le=" << le);
    CHECK(p.bucket[i].cumulative_count == expect);
  }
  CHECK(std::isinf(p.bucket.back().upper_bound));
  CHECK(p.bucket.back().cumulative_count == values.size());
}

TEST_CASE("prometheus buckets scale bounds and sum to the base unit") {
  Histogram h;
  h.record(1500);  // ns
  h.record(3000);
  auto p = to_prometheus(h.snapshot(), 1e-9);
  CHECK(p.sample_sum == Approx(4.5e-6));
  CHECK(p.bucket[10].upper_bound == Approx(2047e-9));  // 2^11 - 1 ns
  CHECK(p.bucket[10].cumulative_count == 1);
  CHECK(p.bucket[11].cumulative_count == 2);
}
