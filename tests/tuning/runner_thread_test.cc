#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "rdmarepl/tuning/heuristic_tuner.h"
#include "rdmarepl/tuning/runner.h"

using namespace rdmarepl::tuning;

TEST_CASE("runner thread decides periodically and stops cleanly", "[tuning]") {
  std::atomic<int> observed{0};
  std::atomic<int> applied{0};
  RunnerOptions opt;
  opt.period = std::chrono::milliseconds(1);
  Knobs start;
  auto r = TunerRunner::create(
      std::make_unique<HeuristicTuner>(start, KnobBounds{}, 500), KnobBounds{}, start,
      [&] {
        ++observed;
        Observation o;
        o.latency_p99_us = 10;  // under target: the batch grows every decision
        return o;
      },
      [&](const Knobs&) { ++applied; }, opt);
  REQUIRE(r.ok());
  REQUIRE((*r)->start().ok());
  REQUIRE((*r)->start().ok());  // idempotent
  // Wait for progress without timing it: the bound only stops a hung test.
  for (int i = 0; i < 20'000 && applied.load() < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (void)(*r)->tick();  // a tick from another thread is serialised with the runner's
  (*r)->stop();
  int after_stop = observed.load();
  CHECK(applied.load() >= 5);
  CHECK((*r)->stats().changes == static_cast<uint64_t>(applied.load()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(observed.load() == after_stop);
  (*r)->stop();  // idempotent
}
