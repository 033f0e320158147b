#include "rdmarepl/core/clock.h"

#include <catch2/catch.hpp>

#include <thread>

using namespace rdmarepl;
using namespace std::chrono_literals;

TEST_CASE("monotonic clock never goes back", "[core][clock]") {
  uint64_t prev = mono_ns();
  for (int i = 0; i < 10000; ++i) {
    uint64_t now = mono_ns();
    REQUIRE(now >= prev);
    prev = now;
  }
}

TEST_CASE("stopwatch measures at least the time slept", "[core][clock]") {
  Stopwatch sw;
  std::this_thread::sleep_for(2ms);
  CHECK(sw.elapsed_ns() >= 2'000'000u);
}

TEST_CASE("deadlines", "[core][clock]") {
  CHECK_FALSE(Deadline::never().expired());
  CHECK(Deadline::never().poll_timeout_ms() == -1);
  auto past = Deadline::after(0ms);
  CHECK(past.expired());
  CHECK(past.poll_timeout_ms() == 0);
  auto later = Deadline::after(10s);
  CHECK_FALSE(later.expired());
  CHECK(later.poll_timeout_ms() > 9000);
}
