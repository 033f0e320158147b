#include "rdmarepl/memory/arena.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "fake_registrar.h"
#include "rdmarepl/memory/counters.h"

using namespace rdmarepl;
using namespace rdmarepl::memory;

TEST_CASE("an arena is page aligned, registered once and deregistered on destruction",
          "[unit][memory]") {
  testing::FakeRegistrar fake;
  Registrar r = fake.registrar();
  Counters counters;
  {
    ArenaOptions opts;
    opts.access = transport::Access::local_write | transport::Access::remote_read;
    auto a = Arena::create(3 * kPageSize + 1, opts, r, &counters);
    REQUIRE(a.ok());
    CHECK(reinterpret_cast<uintptr_t>(a->base()) % kPageSize == 0);
    CHECK(a->size() >= 4 * kPageSize);
    CHECK(a->size() % kPageSize == 0);
    if (a->huge_pages()) {
      CHECK(a->size() % kHugePageSize == 0);
    } else {
      CHECK(a->size() == 4 * kPageSize);
    }
    CHECK(a->registered());
    CHECK(a->region().addr == a->base());
    CHECK(a->region().length == a->size());
    CHECK(a->region().access == opts.access);
    CHECK(a->region().keys.lkey != 0);
    std::memset(a->base(), 0xab, a->size());  // writable
    CHECK(fake.reg_calls() == 1);
    CHECK(counters.registrations.load() == 1);
    CHECK(counters.bytes_registered.load() == a->size());

    Arena moved = std::move(*a);
    CHECK(a->base() == nullptr);
    CHECK(moved.registered());
    CHECK(fake.dereg_calls() == 0);
  }
  CHECK(fake.dereg_calls() == 1);
  CHECK(fake.live() == 0);
  CHECK(counters.deregistrations.load() == 1);
  CHECK(counters.bytes_registered.load() == 0);
  CHECK(counters.arenas.load() == 0);
}

TEST_CASE("a failed registration unmaps the arena and reports the cause", "[unit][memory]") {
  testing::FakeRegistrar fake;
  Registrar r = fake.registrar();
  Counters counters;
  fake.fail_next();
  auto a = Arena::create(kPageSize, ArenaOptions{}, r, &counters);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message().find("registering") != std::string::npos);
  CHECK(counters.registration_failures.load() == 1);
  CHECK(counters.arenas.load() == 0);
  CHECK(fake.dereg_calls() == 0);
}

TEST_CASE("moving an arena over another releases the old one first", "[unit][memory]") {
  testing::FakeRegistrar fake;
  Registrar r = fake.registrar();
  auto a = Arena::create(kPageSize, ArenaOptions{}, r, nullptr);
  auto b = Arena::create(kPageSize, ArenaOptions{}, r, nullptr);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  void* old_a = a->base();
  *a = std::move(*b);
  CHECK(fake.dereg_calls() == 1);
  CHECK_FALSE(fake.is_live(old_a));
  CHECK(fake.live() == 1);
}

TEST_CASE("a zero-byte arena is refused", "[unit][memory]") {
  testing::FakeRegistrar fake;
  Registrar r = fake.registrar();
  auto a = Arena::create(0, ArenaOptions{}, r, nullptr);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().is(Errc::invalid_argument));
}
