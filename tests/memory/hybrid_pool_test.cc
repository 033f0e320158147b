#include "rdmarepl/memory/hybrid_pool.h"

#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "fake_registrar.h"

using namespace rdmarepl;
using namespace rdmarepl::memory;

namespace {

HybridOptions small_options() {
  HybridOptions o;
  o.registered.pool_bytes = 2 * kMaxClassSize;
  o.registered.arena_bytes = kMaxClassSize;
  o.registered.arena.huge_pages = false;
  o.ordinary.pool_bytes = kMaxClassSize;
  o.ordinary.arena_bytes = kMaxClassSize;
  return o;
}

}  // namespace

TEST_CASE("remote blocks come from registered memory, the rest from ordinary memory",
          "[unit][memory]") {
  testing::FakeRegistrar fake;
  auto created = HybridPool::create(small_options(), fake.registrar());
  REQUIRE(created.ok());
  HybridPool& pool = **created;
  CHECK(fake.reg_calls() == 2);  // the registered arenas only

  Buffer remote = pool.alloc(1000, true);
  Buffer local = pool.alloc(1000, false);
  REQUIRE(remote);
  REQUIRE(local);
  CHECK(remote.lkey() != 0);
  CHECK(local.lkey() == 0);
  std::memset(local.data(), 7, local.size());
  std::memset(remote.data(), 9, remote.size());

  auto r = pool.translate(remote.data(), remote.size());
  REQUIRE(r);
  CHECK(r->keys == remote.keys());
  CHECK_FALSE(pool.translate(local.data()));  // ordinary memory has no registration

  // The ordinary side grows on demand without registering anything.
  std::vector<Buffer> many;
  for (int i = 0; i < 3; ++i) {
    many.push_back(pool.alloc(kMaxClassSize, false));
    CHECK(many.back());
  }
  CHECK(fake.reg_calls() == 2);
  auto s = pool.stats();
  CHECK(s.total_allocations() == 5);
  CHECK(s.registrations == 2);
  CHECK(s.translation_hits == 1);
  CHECK(s.translation_misses == 1);
}

TEST_CASE("external regions go through the registration cache and the translation table",
          "[unit][memory]") {
  testing::FakeRegistrar fake;
  auto created = HybridPool::create(small_options(), fake.registrar());
  REQUIRE(created.ok());
  HybridPool& pool = **created;
  const size_t len = 8 * kPageSize;
  void* store = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(store != MAP_FAILED);
  {
    auto pin = pool.register_external(store, len, transport::Access::local_write);
    REQUIRE(pin.ok());
    auto again = pool.register_external(store, kPageSize, transport::Access::local_write);
    REQUIRE(again.ok());
    CHECK(again->keys() == pin->keys());
    auto t = pool.translate(static_cast<char*>(store) + len - 1);
    REQUIRE(t);
    CHECK(t->keys == pin->keys());
    auto s = pool.stats();
    CHECK(s.cache_hits == 1);
    CHECK(s.cache_misses == 1);
    CHECK(s.cache_hit_rate() == Approx(0.5));
  }
  CHECK(pool.reclaim_idle(mono_ns() + 3600ull * 1'000'000'000ull) >= 1);
  CHECK_FALSE(pool.translate(store));
  munmap(store, len);
}

TEST_CASE("a hybrid pool needs a registrar that registers", "[unit][memory]") {
  auto created = HybridPool::create(small_options(), no_registrar());
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().is(Errc::invalid_argument));
}
