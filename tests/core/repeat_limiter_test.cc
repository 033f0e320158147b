// RepeatLimiter: one line per key per interval, the rest counted and reported.
#include "core/repeat_limiter.h"

#include <catch2/catch.hpp>

#include <thread>

using namespace rdmarepl;
using namespace std::chrono_literals;

TEST_CASE("repeat limiter: the first line of a key passes, repeats within the interval are held",
          "[core]") {
  RepeatLimiter l(10s);
  uint64_t held = 99;
  CHECK(l.admit("refused|10.0.0.1", held));
  CHECK(held == 0);
  for (int i = 0; i < 5; ++i) CHECK_FALSE(l.admit("refused|10.0.0.1", held));
  // Another key (kind or address) is not held back by the first.
  CHECK(l.admit("refused|10.0.0.2", held));
  CHECK(l.admit("timeout|10.0.0.1", held));
  // The interval has not ended: nothing to report yet.
  CHECK(l.flush().empty());
}

TEST_CASE("repeat limiter: once the interval ended the count is reported once", "[core]") {
  RepeatLimiter l(1ms);
  uint64_t held = 0;
  REQUIRE(l.admit("k", held));
  // Held back or not depends on how fast this runs; count what was held.
  uint64_t held_back = 0;
  for (int i = 0; i < 3; ++i)
    if (!l.admit("k", held)) ++held_back;
  std::this_thread::sleep_for(5ms);
  // Either the next line carries the count, or flush() reports it: exactly once.
  uint64_t reported = 0;
  for (const auto& [key, n] : l.flush()) {
    CHECK(key == "k");
    reported += n;
  }
  std::this_thread::sleep_for(5ms);
  REQUIRE(l.admit("k", held));
  reported += held;
  CHECK(reported == held_back);
  CHECK(held_back_note(3, 1s) == " (3 more like it in the last 1000 ms)");
  CHECK(held_back_note(0, 1s).empty());
}

TEST_CASE("repeat limiter: keys beyond the bound are counted together", "[core]") {
  RepeatLimiter l(10s, 2);
  uint64_t held = 0;
  CHECK(l.admit("a", held));
  CHECK(l.admit("b", held));
  CHECK_FALSE(l.admit("c", held));
  CHECK_FALSE(l.admit("d", held));
  RepeatLimiter quick(1ms, 2);
  CHECK(quick.admit("a", held));
  CHECK(quick.admit("b", held));
  CHECK_FALSE(quick.admit("c", held));
  std::this_thread::sleep_for(5ms);
  const auto out = quick.flush();
  REQUIRE(out.size() == 1);
  CHECK(out[0].first.empty());  // the overflow
  CHECK(out[0].second == 1);
}
