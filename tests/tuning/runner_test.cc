#include <catch2/catch.hpp>
#include <vector>

#include "rdmarepl/tuning/heuristic_tuner.h"
#include "rdmarepl/tuning/runner.h"
#include "rdmarepl/tuning/static_tuner.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;

namespace {

// Records what it is fed and returns a scripted batch size per decision.
class ScriptedTuner final : public Tuner {
 public:
  explicit ScriptedTuner(std::vector<uint64_t> batches) : batches_(std::move(batches)) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "scripted"; }
  Knobs decide(const Observation& o) override {
    seen.push_back(o.latency_p99_us);
    Knobs k;
    k.batch_bytes = batches_[std::min(next_++, batches_.size() - 1)];
    return k;
  }
  void learn(const Sample& s) override { samples.push_back(s); }

  std::vector<double> seen;
  std::vector<Sample> samples;

 private:
  std::vector<uint64_t> batches_;
  size_t next_ = 0;
};

}  // namespace

TEST_CASE("runner applies only changes and counts them", "[tuning]") {
  std::vector<Knobs> applied;
  double p99 = 0;
  auto tuner = std::make_unique<ScriptedTuner>(
      std::vector<uint64_t>{65536, 131072, 131072, 8 * 1024 * 1024, 65536});
  ScriptedTuner* raw = tuner.get();
  auto r = TunerRunner::create(
      std::move(tuner), KnobBounds{}, Knobs{},
      [&] {
        Observation o;
        o.latency_p99_us = p99 += 10;
        o.bytes_per_s = p99 * 1000;
        return o;
      },
      [&](const Knobs& k) { applied.push_back(k); });
  REQUIRE(r.ok());
  TunerRunner& runner = **r;

  CHECK_FALSE(runner.tick());  // 65536 is the default: no change
  CHECK(runner.tick());        // -> 131072
  CHECK_FALSE(runner.tick());  // same
  CHECK(runner.tick());        // 8 MiB is out of bounds: clamped to 4 MiB
  CHECK(runner.tick());        // back to 65536
  RunnerStats s = runner.stats();
  CHECK(s.decisions == 5);
  CHECK(s.changes == 3);
  CHECK(s.out_of_bounds == 1);
  REQUIRE(applied.size() == 3);
  CHECK(applied[0].batch_bytes == 131072);
  CHECK(applied[1].batch_bytes == KnobBounds{}.batch_bytes.max);
  CHECK(applied[2].batch_bytes == 65536);
  CHECK(runner.current().batch_bytes == 65536);

  // Samples pair each window with the knobs in force during it and the next window's outcome.
  REQUIRE(raw->samples.size() == 4);
  CHECK(raw->samples[1].observation.latency_p99_us == 20);
  CHECK(raw->samples[1].observed_under.batch_bytes == 65536);
  CHECK(raw->samples[1].knobs.batch_bytes == 131072);
  CHECK(raw->samples[1].outcome.latency_p99_us == 30);
  CHECK(raw->samples[3].observed_under.batch_bytes == 131072);
  CHECK(raw->samples[3].knobs.batch_bytes == KnobBounds{}.batch_bytes.max);
}

TEST_CASE("runner rejects bad construction arguments", "[tuning]") {
  auto observe = [] { return Observation{}; };
  auto apply = [](const Knobs&) {};
  auto no_tuner = TunerRunner::create(nullptr, KnobBounds{}, Knobs{}, observe, apply);
  CHECK_FALSE(no_tuner.ok());
  RunnerOptions zero;
  zero.period = std::chrono::milliseconds(0);
  auto bad_period = TunerRunner::create(std::make_unique<StaticTuner>(Knobs{}, KnobBounds{}),
                                        KnobBounds{}, Knobs{}, observe, apply, zero);
  REQUIRE_FALSE(bad_period.ok());
  CHECK_THAT(bad_period.error().message(), Catch::Contains("period"));
}

TEST_CASE("runner with the heuristic tuner backs off under a latency breach", "[tuning]") {
  Knobs start;
  start.batch_bytes = 1 << 20;
  std::vector<uint64_t> batches;
  auto r = TunerRunner::create(
      std::make_unique<HeuristicTuner>(start, KnobBounds{}, 500), KnobBounds{}, start,
      [] {
        Observation o;
        o.latency_p99_us = 2000;
        return o;
      },
      [&](const Knobs& k) { batches.push_back(k.batch_bytes); });
  REQUIRE(r.ok());
  for (int i = 0; i < 3; ++i) CHECK((*r)->tick());
  CHECK(batches == std::vector<uint64_t>{1 << 19, 1 << 18, 1 << 17});
}
