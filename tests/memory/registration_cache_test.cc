#include "rdmarepl/memory/registration_cache.h"

#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "fake_registrar.h"
#include "rdmarepl/memory/arena.h"

using namespace rdmarepl;
using namespace rdmarepl::memory;
using transport::Access;

namespace {

// Stands in for the store's own mmap'd memory.
struct StoreMemory {
  explicit StoreMemory(size_t pages) : size(pages * kPageSize) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~StoreMemory() {
    if (base != nullptr) munmap(base, size);
  }
  char* page(size_t i) const { return base + i * kPageSize; }
  char* base;
  size_t size;
};

MemoryStats stats_of(const RegistrationCache& c) {
  MemoryStats s;
  c.counters().fill(s);
  return s;
}

constexpr uint64_t kHour = 3600ull * 1'000'000'000ull;

}  // namespace

TEST_CASE("a region used again is a cache hit, also for a sub-range", "[unit][memory]") {
  StoreMemory mem(16);
  REQUIRE(mem.base != nullptr);
  testing::FakeRegistrar fake;
  TranslationTable table;
  RegistrationCache cache(fake.registrar(), CacheOptions{}, nullptr, &table);

  auto first = cache.acquire(mem.page(0), 4 * kPageSize, Access::local_write);
  REQUIRE(first.ok());
  CHECK(fake.reg_calls() == 1);
  CHECK(first->region().addr == mem.page(0));
  const auto keys = first->keys();

  auto again = cache.acquire(mem.page(0), 4 * kPageSize, Access::local_write);
  REQUIRE(again.ok());
  auto inner = cache.acquire(mem.page(1) + 100, 10, Access::local_write);  // inside
  REQUIRE(inner.ok());
  CHECK(inner->keys() == keys);
  CHECK(fake.reg_calls() == 1);

  // The registration is visible to address translation.
  CHECK(table.lookup(mem.page(3) + kPageSize - 1)->keys == keys);

  auto s = stats_of(cache);
  CHECK(s.cache_hits == 2);
  CHECK(s.cache_misses == 1);
  CHECK(s.cache_hit_rate() == Approx(2.0 / 3.0));
}

TEST_CASE("a miss that needs more access or a larger range replaces the cached entry",
          "[unit][memory]") {
  StoreMemory mem(16);
  testing::FakeRegistrar fake;
  RegistrationCache cache(fake.registrar(), CacheOptions{});
  {
    auto a = cache.acquire(mem.page(0), 2 * kPageSize, Access::local_write);
    REQUIRE(a.ok());
  }
  auto wider = cache.acquire(mem.page(0), 4 * kPageSize, Access::local_write);
  REQUIRE(wider.ok());
  CHECK(fake.reg_calls() == 2);
  CHECK(fake.dereg_calls() == 1);  // the smaller registration was replaced
  CHECK(cache.size() == 1);
  // A pinned overlapping entry cannot be replaced.
  auto more = cache.acquire(mem.page(0), 4 * kPageSize, Access::local_write | Access::remote_read);
  REQUIRE_FALSE(more.ok());
  CHECK(more.error().is(Errc::busy));
  wider->reset();
  auto more2 = cache.acquire(mem.page(0), 4 * kPageSize, Access::local_write | Access::remote_read);
  REQUIRE(more2.ok());
  CHECK(transport::has(more2->region().access, Access::remote_read));
}

TEST_CASE("the least recently used unpinned registration is evicted at capacity",
          "[unit][memory]") {
  StoreMemory mem(16);
  testing::FakeRegistrar fake;
  CacheOptions o;
  o.capacity = 2;
  RegistrationCache cache(fake.registrar(), o);
  auto acquire = [&](size_t page) {
    auto p = cache.acquire(mem.page(page), kPageSize, Access::local_write);
    REQUIRE(p.ok());
    return std::move(*p);
  };
  acquire(0);
  acquire(1);
  acquire(0);  // hit: page 1 is now the least recently used
  acquire(2);  // evicts page 1
  CHECK(fake.is_live(mem.page(0)));
  CHECK_FALSE(fake.is_live(mem.page(1)));
  CHECK(fake.is_live(mem.page(2)));
  CHECK(stats_of(cache).cache_evictions == 1);
  acquire(0);  // still cached
  CHECK(stats_of(cache).cache_hits == 2);

  // Pinned entries are skipped; when every entry is pinned the cache refuses.
  RegistrationCache::Pin p0 = acquire(0);
  RegistrationCache::Pin p2 = acquire(2);
  auto full = cache.acquire(mem.page(3), kPageSize, Access::local_write);
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().is(Errc::out_of_memory));
  CHECK(full.error().message().find("capacity") != std::string::npos);
  p2.reset();
  CHECK(cache.acquire(mem.page(3), kPageSize, Access::local_write).ok());
  CHECK_FALSE(fake.is_live(mem.page(2)));
  CHECK(fake.is_live(mem.page(0)));
}

TEST_CASE("idle registrations expire, pinned ones do not", "[unit][memory]") {
  StoreMemory mem(4);
  testing::FakeRegistrar fake;
  CacheOptions o;
  o.idle_timeout = std::chrono::milliseconds(50);
  RegistrationCache cache(fake.registrar(), o);
  const uint64_t t0 = mono_ns();  // before any entry was last used
  auto pinned = cache.acquire(mem.page(0), kPageSize, Access::local_write);
  REQUIRE(pinned.ok());
  {
    auto idle = cache.acquire(mem.page(1), kPageSize, Access::local_write);
    REQUIRE(idle.ok());
  }

  CHECK(cache.reclaim_idle(t0) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(cache.reclaim_idle() == 1);
  CHECK(fake.is_live(mem.page(0)));
  CHECK_FALSE(fake.is_live(mem.page(1)));
  CHECK(stats_of(cache).cache_expirations == 1);

  pinned->reset();
  CHECK(cache.reclaim_idle(mono_ns() + kHour) == 1);
  CHECK(fake.live() == 0);
  CHECK(stats_of(cache).bytes_registered == 0);
}

TEST_CASE("external regions are checked before they are registered", "[unit][memory]") {
  StoreMemory mem(4);
  testing::FakeRegistrar fake;
  CacheOptions o;
  o.max_region_bytes = 2 * kPageSize;
  RegistrationCache cache(fake.registrar(), o);
  CHECK(cache.acquire(mem.base + 8, kPageSize, Access::local_write).error().is(Errc::misaligned));
  CHECK(cache.acquire(mem.base, 4 * kPageSize, Access::local_write).error().is(Errc::too_large));
  char* gone = mem.page(3);
  REQUIRE(munmap(gone, kPageSize) == 0);
  CHECK(
      cache.acquire(mem.page(2), 2 * kPageSize, Access::local_write).error().is(Errc::not_mapped));
  CHECK(fake.reg_calls() == 0);

  fake.fail_next();
  auto failed = cache.acquire(mem.base, kPageSize, Access::local_write);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message().find("ENOMEM") != std::string::npos);
  CHECK(cache.size() == 0);
  CHECK(stats_of(cache).registration_failures == 1);
}

TEST_CASE("the cache deregisters everything when destroyed", "[unit][memory]") {
  StoreMemory mem(4);
  testing::FakeRegistrar fake;
  {
    RegistrationCache cache(fake.registrar(), CacheOptions{});
    for (size_t i = 0; i < 4; ++i)
      REQUIRE(cache.acquire(mem.page(i), kPageSize, Access::local_write).ok());
    CHECK(fake.live() == 4);
  }
  CHECK(fake.live() == 0);
  CHECK(fake.dereg_calls() == 4);
}

TEST_CASE("pin_cached pins only what is still cached, and release waits for the pins",
          "[unit][memory]") {
  StoreMemory mem(8);
  REQUIRE(mem.base != nullptr);
  testing::FakeRegistrar fake;
  TranslationTable table;
  RegistrationCache cache(fake.registrar(), CacheOptions{}, nullptr, &table);
  {
    auto a = cache.acquire(mem.page(0), 4 * kPageSize, Access{});
    REQUIRE(a.ok());
  }
  const auto found = table.lookup(mem.page(1) + 10, 100);
  REQUIRE(found.has_value());

  auto pin = cache.pin_cached(*found);
  REQUIRE(pin);
  CHECK(pin.keys() == found->keys);
  CHECK(cache.pins(mem.page(0)) == 1);
  CHECK(cache.pins(mem.page(1)) == 0);  // not the start of a cached registration
  CHECK(stats_of(cache).cache_hits == 1);

  // Pinned: neither released nor expired.
  CHECK(cache.release(mem.page(0)) == RegistrationCache::Release::pinned);
  CHECK(cache.reclaim_idle(mono_ns() + kHour) == 0);
  pin.reset();
  CHECK(cache.pins(mem.page(0)) == 0);
  CHECK(cache.release(mem.page(0)) == RegistrationCache::Release::released);
  CHECK(fake.dereg_calls() == 1);
  CHECK(table.size() == 0);
  CHECK(cache.release(mem.page(0)) == RegistrationCache::Release::absent);

  // A table entry of a registration released since is not pinned (no stale keys).
  CHECK_FALSE(cache.pin_cached(*found));
  {
    auto again = cache.acquire(mem.page(0), 4 * kPageSize, Access{});
    REQUIRE(again.ok());
  }
  CHECK_FALSE(cache.pin_cached(*found));  // same range, new keys
  CHECK(cache.pin_cached(*table.lookup(mem.page(0))));
}
