#include <catch2/catch.hpp>

#include "rdmarepl/tuning/heuristic_tuner.h"

using namespace rdmarepl::tuning;

namespace {
Observation obs(double p99_us, std::optional<double> cpu = std::nullopt, double queue = 0) {
  Observation o;
  o.latency_p99_us = p99_us;
  o.cpu_utilization = cpu;
  o.queue_depth = queue;
  return o;
}
}  // namespace

TEST_CASE("heuristic: multiplicative decrease on a latency breach, additive increase otherwise",
          "[tuning]") {
  KnobBounds b;
  Knobs k;
  k.batch_bytes = 256 * 1024;
  HeuristicTuner t(k, b, /*target*/ 500);
  CHECK(t.decide(obs(900)).batch_bytes == 128 * 1024);
  CHECK(t.decide(obs(900)).batch_bytes == 64 * 1024);
  CHECK(t.decide(obs(100)).batch_bytes == 64 * 1024 + 4 * b.batch_bytes.step);
  CHECK(t.decide(obs(500)).batch_bytes == 64 * 1024 + 8 * b.batch_bytes.step);  // at target: ok
}

TEST_CASE("heuristic: batch size never leaves its bounds", "[tuning]") {
  KnobBounds b;
  b.batch_bytes = {8192, 65536, 4096};
  Knobs k;
  k.batch_bytes = 16384;
  HeuristicTuner t(k, b, 500);
  for (int i = 0; i < 10; ++i) CHECK(t.decide(obs(10'000)).batch_bytes >= 8192);
  CHECK(t.decide(obs(10'000)).batch_bytes == 8192);
  for (int i = 0; i < 50; ++i) CHECK(t.decide(obs(10)).batch_bytes <= 65536);
  CHECK(t.decide(obs(10)).batch_bytes == 65536);
}

TEST_CASE("heuristic: shards follow CPU, one at a time, within bounds", "[tuning]") {
  KnobBounds b;
  b.shards = {1, 3, 1};
  Knobs k;
  k.shards = 2;
  HeuristicTuner t(k, b, 500);
  CHECK(t.decide(obs(100, 0.95)).shards == 1);
  CHECK(t.decide(obs(100, 0.95)).shards == 1);     // floor
  CHECK(t.decide(obs(100, 0.2)).shards == 1);      // idle CPU but no pressure: stay
  CHECK(t.decide(obs(900, 0.2)).shards == 2);      // latency breach with spare CPU: add
  CHECK(t.decide(obs(100, 0.2, 10)).shards == 3);  // backlog with spare CPU: add
  CHECK(t.decide(obs(900, 0.2)).shards == 3);      // ceiling
  CHECK(t.decide(obs(900)).shards == 3);           // no CPU reading: leave alone
}
