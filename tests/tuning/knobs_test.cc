#include <catch2/catch.hpp>

#include "rdmarepl/core/enum_text.h"
#include "rdmarepl/tuning/knobs.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;

TEST_CASE("KnobRange::snap clamps and rounds to the step grid", "[tuning]") {
  KnobRange r{10, 100, 20};  // allowed: 10 30 50 70 90
  CHECK(r.snap(0) == 10);
  CHECK(r.snap(10) == 10);
  CHECK(r.snap(19) == 10);
  CHECK(r.snap(21) == 30);
  CHECK(r.snap(89) == 90);
  CHECK(r.snap(100) == 90);
  CHECK(r.snap(1000) == 90);
  CHECK(r.contains(50));
  CHECK_FALSE(r.contains(55));
  CHECK_FALSE(r.contains(100));
}

TEST_CASE("validate(KnobBounds) rejects malformed ranges with the values in the message",
          "[tuning]") {
  KnobBounds b;
  REQUIRE(validate(b).ok());
  b.batch_bytes = {8192, 4096, 4096};
  Status s = validate(b);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().is(Errc::invalid_argument));
  CHECK_THAT(s.error().message(), Catch::Contains("batch_bytes") && Catch::Contains("min=8192"));

  b = KnobBounds{};
  b.shards = {0, 4, 1};
  CHECK_FALSE(validate(b).ok());
  b = KnobBounds{};
  b.poll_modes = 0;
  CHECK_FALSE(validate(b).ok());
  b = KnobBounds{};
  b.flush_delay_us.step = 0;
  CHECK_FALSE(validate(b).ok());
}

TEST_CASE("validate(Knobs) names the offending knob, clamp makes any knobs valid", "[tuning]") {
  KnobBounds b;
  Knobs k;
  REQUIRE(validate(k, b).ok());
  k.shards = 99;
  Status s = validate(k, b);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message(), Catch::Contains("shards=99"));

  b.poll_modes = 1u << static_cast<unsigned>(PollingMode::blocking);
  Knobs wild{1, 999999, 0, PollingMode::busy, 0, 1};
  Knobs c = clamp(wild, b);
  CHECK(validate(c, b).ok());
  CHECK(c.batch_bytes == b.batch_bytes.min);
  CHECK(c.shards == 1);
  CHECK(c.poll_mode == PollingMode::blocking);
  CHECK(c.flush_delay_us == b.flush_delay_us.max);
}

TEST_CASE("polling modes read back what to_string prints", "[tuning]") {
  for (PollingMode m : enum_values(PollingMode{}))
    CHECK(from_string<PollingMode>(to_string(m)) == m);
  CHECK(*parse_enum<PollingMode>("sleep", "poll_mode") == PollingMode::sleep);
  CHECK_FALSE(from_string<PollingMode>("2").has_value());
  auto bad = parse_enum<PollingMode>("spin", "poll_mode");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(),
             Catch::Contains("spin") && Catch::Contains("busy, sleep, blocking, manual"));
  CHECK_THAT(to_string(Knobs{}), Catch::Contains("poll=busy"));
}
