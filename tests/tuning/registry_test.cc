#include <catch2/catch.hpp>

#include "rdmarepl/tuning/registry.h"
#include "rdmarepl/tuning/static_tuner.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;

namespace {
class FixedBatchTuner final : public Tuner {
 public:
  explicit FixedBatchTuner(uint64_t batch) : batch_(batch) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "fixed-batch"; }
  Knobs decide(const Observation&) override {
    Knobs k;
    k.batch_bytes = batch_;
    return k;
  }

 private:
  uint64_t batch_;
};
}  // namespace

TEST_CASE("static tuner returns its knobs whatever it observes", "[tuning]") {
  Knobs k;
  k.batch_bytes = 32 * 1024;
  k.shards = 3;
  StaticTuner t(k, KnobBounds{});
  Observation o;
  o.latency_p99_us = 1e6;
  o.cpu_utilization = 1.0;
  CHECK(t.decide(o) == k);
  CHECK(t.decide(Observation{}) == k);
  CHECK(t.name() == "static");
}

TEST_CASE("registry creates the built-in tuners by name", "[tuning]") {
  TunerConfig c;
  c.model.model_path = "/nonexistent/model.json";  // keep this test independent of models
  auto names = TunerRegistry::global().names();
  for (const char* n : {"static", "heuristic", "xgboost", "lstm"}) {
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
    auto t = make_tuner(n, c);
    REQUIRE(t.ok());
    CHECK((*t)->name() == n);
  }
  CHECK(kDefaultTuner == "xgboost");
}

TEST_CASE("registry errors: unknown name, taken name, invalid config", "[tuning]") {
  TunerConfig c;
  auto t = make_tuner("quantum", c);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().is(Errc::not_found));
  CHECK_THAT(t.error().message(), Catch::Contains("quantum") && Catch::Contains("heuristic"));

  Status dup = TunerRegistry::global().add("static", [](const TunerConfig&) {
    return Result<std::unique_ptr<Tuner>>(Error(Errc::unsupported, "x"));
  });
  CHECK(dup.error().is(Errc::already_exists));

  c.initial.shards = 1000;
  auto bad = make_tuner("static", c);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(), Catch::Contains("shards=1000"));
}

TEST_CASE("a user tuner registers by name and is created through the registry", "[tuning]") {
  TunerRegistry reg;  // a private registry, so the test leaves the global one alone
  REQUIRE(reg.add("fixed-batch",
                  [](const TunerConfig& c) -> Result<std::unique_ptr<Tuner>> {
                    return std::unique_ptr<Tuner>(
                        std::make_unique<FixedBatchTuner>(c.bounds.batch_bytes.max));
                  })
              .ok());
  auto t = reg.create("fixed-batch", TunerConfig{});
  REQUIRE(t.ok());
  CHECK((*t)->decide(Observation{}).batch_bytes == KnobBounds{}.batch_bytes.max);
}
