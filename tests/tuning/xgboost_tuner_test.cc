#include <catch2/catch.hpp>
#include <random>

#include "rdmarepl/tuning/synthetic.h"
#include "rdmarepl/tuning/xgboost_tuner.h"
#include "tuning_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;
using rdmarepl::tuning::testing::copy_of_small_model;
using rdmarepl::tuning::testing::skip_without_xgboost;

namespace {

ModelTunerOptions no_learning() {
  ModelTunerOptions o;
  o.refresh_every = 0;
  return o;
}

}  // namespace

TEST_CASE("xgboost tuner: decisions stay inside the bounds and move one step at a time",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  KnobBounds b;
  b.batch_bytes = {16 * 1024, 512 * 1024, 4096};
  b.shards = {2, 6, 1};
  b.flush_delay_us = {10, 200, 10};
  b.pool_bytes = {64ull << 20, 256ull << 20, 1ull << 20};
  b.poll_modes = 0b011;  // busy or sleep only
  Knobs start;
  start.flush_delay_us = 50;
  start.shards = 3;
  XgboostTuner t(copy_of_small_model(), start, b, 300, no_learning());
  std::mt19937_64 rng(5);
  CostModel m;
  Knobs prev = clamp(start, b);
  for (int i = 0; i < 300; ++i) {
    Observation o = m.simulate(random_workload(rng), random_knobs(KnobBounds{}, rng), &rng);
    if (i % 7 == 0) o.cpu_utilization.reset();  // missing inputs are fine too
    Knobs k = t.decide(o);
    INFO("decision " << i << ": " << to_string(prev) << " -> " << to_string(k));
    REQUIRE(validate(k, b).ok());
    CHECK(k.batch_bytes <= prev.batch_bytes * 2);
    CHECK(k.batch_bytes * 2 >= prev.batch_bytes);
    CHECK((k.shards <= prev.shards + 1 && k.shards + 1 >= prev.shards));
    prev = k;
  }
  CHECK(t.stats().decisions == 300);
  CHECK(t.stats().fallbacks == 0);
}

TEST_CASE("xgboost tuner improves a saturated channel in the synthetic system",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  CostModel m;
  Workload w;
  w.offered_bytes_per_s = 6e9;
  w.value_mean_bytes = 1024;
  w.value_stddev_bytes = 256;
  Knobs start;
  start.batch_bytes = 16 * 1024;
  start.shards = 1;
  ModelTunerOptions opt = no_learning();
  opt.revert_margin = 0.5;
  XgboostTuner t(copy_of_small_model(), start, KnobBounds{}, 1000, opt);
  Observation first = m.simulate(w, start, nullptr);
  Knobs k = start;
  Observation o = first;
  for (int i = 0; i < 30; ++i) {
    k = t.decide(o);
    o = m.simulate(w, k, nullptr);
  }
  INFO("start " << to_string(start) << ": " << first.bytes_per_s << " B/s p99 "
                << first.latency_p99_us << " us; end " << to_string(k) << ": " << o.bytes_per_s
                << " B/s p99 " << o.latency_p99_us << " us");
  CHECK(t.stats().moves > 0);
  CHECK(o.bytes_per_s > first.bytes_per_s * 1.2);
  CHECK(o.latency_p99_us < first.latency_p99_us);
}

TEST_CASE("xgboost tuner reverts a move whose outcome falls short of the prediction",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  CostModel m;
  Workload w;
  w.offered_bytes_per_s = 6e9;
  Knobs start;
  start.batch_bytes = 16 * 1024;
  start.shards = 1;
  ModelTunerOptions opt = no_learning();
  opt.hold_after_revert = 2;
  XgboostTuner t(copy_of_small_model(), start, KnobBounds{}, 1000, opt);
  Observation o = m.simulate(w, start, nullptr);
  Knobs moved = t.decide(o);
  REQUIRE(moved != clamp(start, KnobBounds{}));  // a saturated channel: the tuner moves
  Observation awful = o;
  awful.bytes_per_s = o.bytes_per_s / 10;
  awful.latency_p99_us = o.latency_p99_us * 10;
  CHECK(t.decide(awful) == clamp(start, KnobBounds{}));
  CHECK(t.stats().reverts == 1);
  // It holds still for hold_after_revert decisions before exploring again.
  CHECK(t.decide(o) == clamp(start, KnobBounds{}));
  CHECK(t.decide(o) == clamp(start, KnobBounds{}));
}

TEST_CASE("xgboost tuner without a usable model falls back to static knobs", "[tuning]") {
  Knobs start;
  start.batch_bytes = 96 * 1024;
  ModelTunerOptions opt;
  opt.model_path = "/nonexistent/model.json";
  XgboostTuner t(start, KnobBounds{}, 500, opt);
  CHECK_FALSE(t.has_model());
  REQUIRE(t.last_error().has_value());
  CHECK_THAT(t.last_error()->message(), Catch::Contains("/nonexistent/model.json"));
  Observation o;
  o.latency_p99_us = 1e6;
  CHECK(t.decide(o) == start);
  CHECK(t.stats().fallbacks == 1);
  CHECK(t.model_version() == 0);
}

TEST_CASE("xgboost tuner keeps its model when a new one fails to load", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  XgboostTuner t(copy_of_small_model(), Knobs{}, KnobBounds{}, 500, no_learning());
  uint64_t v = t.model_version();
  Status s = t.load_model("/nonexistent/other.json");
  REQUIRE_FALSE(s.ok());
  CHECK(t.has_model());
  CHECK(t.model_version() == v);
  CostModel m;
  (void)t.decide(m.simulate(Workload{}, Knobs{}, nullptr));
  CHECK(t.stats().fallbacks == 0);
}

TEST_CASE("xgboost tuner learns online: samples fill a bounded ring, refreshes bump the version",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  ModelTunerOptions opt;
  opt.ring_capacity = 64;
  opt.refresh_every = 50;
  opt.update.rounds = 2;
  XgboostTuner t(copy_of_small_model(), Knobs{}, KnobBounds{}, 500, opt);
  uint64_t v0 = t.model_version();
  auto live = generate_dataset(120, 11, KnobBounds{});
  for (const auto& s : live) t.learn(s);
  CHECK(t.ring_size() == 64);
  CHECK(t.stats().refreshes == 2);
  CHECK(t.model_version() == v0 + 2);
  CHECK(t.model()->trees_per_target() == testing::small_model().trees_per_target() + 4);
}

TEST_CASE("xgboost tuner with no model learns one from live samples", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  ModelTunerOptions opt;
  opt.model_path = "/nonexistent/model.json";
  opt.refresh_every = 200;
  XgboostTuner t(Knobs{}, KnobBounds{}, 500, opt);
  REQUIRE_FALSE(t.has_model());
  for (const auto& s : generate_dataset(200, 12, KnobBounds{})) t.learn(s);
  CHECK(t.has_model());
  CHECK(t.model_version() == 1);
}
