#include "rdmarepl/memory/slab_pool.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_registrar.h"

using namespace rdmarepl;
using namespace rdmarepl::memory;

namespace {

// A pool of `arenas` arenas of 1 MiB on 4 KiB pages (sizes are exact: no huge-page rounding).
PoolOptions small_pool(size_t arenas = 1) {
  PoolOptions o;
  o.pool_bytes = arenas * kMaxClassSize;
  o.arena_bytes = kMaxClassSize;
  o.arena.huge_pages = false;
  return o;
}

bool inside(const Buffer& b, const std::vector<transport::RegisteredRegion>& regions) {
  for (const auto& r : regions) {
    auto* base = static_cast<std::byte*>(r.addr);
    if (b.data() >= base && b.data() + b.capacity() <= base + r.length) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the pool size defaults to twice the working set", "[unit][memory]") {
  PoolOptions o;
  o.working_set_bytes = 10 << 20;
  CHECK(o.initial_bytes() == 20u << 20);
  o.working_set_factor = 3.0;
  CHECK(o.initial_bytes() == 30u << 20);
  o.pool_bytes = 5 << 20;
  CHECK(o.initial_bytes() == 5u << 20);

  testing::FakeRegistrar fake;
  PoolOptions p = small_pool();
  p.pool_bytes = 0;
  p.working_set_bytes = 3 * kMaxClassSize / 2;  // 1.5 MiB -> 3 MiB -> three 1 MiB arenas
  auto pool = SlabPool::create(p, fake.registrar());
  REQUIRE(pool.ok());
  CHECK((*pool)->arena_count() == 3);
  CHECK((*pool)->capacity_bytes() == 3 * kMaxClassSize);
  CHECK(fake.reg_calls() == 3);
}

TEST_CASE("every size class allocates a usable chunk inside a registered arena", "[unit][memory]") {
  testing::FakeRegistrar fake;
  auto pool = SlabPool::create(small_pool(2), fake.registrar());
  REQUIRE(pool.ok());
  auto regions = (*pool)->regions();
  for (unsigned c = 0; c < kNumClasses; ++c) {
    const size_t size = class_size(c) - 1;
    Buffer b = (*pool)->alloc(size);
    REQUIRE(b);
    CHECK(b.size() == size);
    CHECK(b.capacity() == class_size(c));
    CHECK(b.size_class() == c);
    CHECK(reinterpret_cast<uintptr_t>(b.data()) % std::min(class_size(c), kPageSize) == 0);
    CHECK(inside(b, regions));
    bool keys_match = false;
    for (const auto& r : regions) {
      auto* base = static_cast<std::byte*>(r.addr);
      if (b.data() >= base && b.data() < base + r.length) keys_match = r.keys == b.keys();
    }
    CHECK(keys_match);
    CHECK(b.lkey() != 0);
    CHECK(b.remote().rkey == b.rkey());
    CHECK(b.remote().addr == reinterpret_cast<uint64_t>(b.data()));
    std::memset(b.data(), static_cast<int>(c), b.capacity());
    CHECK(b.data()[b.capacity() - 1] == static_cast<std::byte>(c));
  }
  auto s = (*pool)->stats();
  for (unsigned c = 0; c < kNumClasses; ++c) CHECK(s.allocations[c] == 1);
}

TEST_CASE("sizes above the largest class fail without touching the pool", "[unit][memory]") {
  auto pool = SlabPool::create(small_pool(), local_registrar());
  REQUIRE(pool.ok());
  Buffer b = (*pool)->alloc(kMaxClassSize + 1);
  CHECK_FALSE(b);
  CHECK(b.data() == nullptr);
  CHECK((*pool)->stats().failed_allocations == 1);
  Buffer z = (*pool)->alloc(0);
  REQUIRE(z);
  CHECK(z.capacity() == kMinClassSize);
}

TEST_CASE("an exhausted pool returns empty buffers and never registers more", "[unit][memory]") {
  testing::FakeRegistrar fake;
  auto created = SlabPool::create(small_pool(), fake.registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  const int regs = fake.reg_calls();

  SECTION("largest class") {
    Buffer a = pool.alloc(kMaxClassSize);
    REQUIRE(a);
    Buffer b = pool.alloc(kMaxClassSize);
    CHECK_FALSE(b);
    CHECK(pool.stats().failed_allocations == 1);
    a.reset();
    Buffer c = pool.alloc(kMaxClassSize);
    CHECK(c);
  }
  SECTION("smallest class, then the memory is re-carved for another class") {
    std::vector<Buffer> all;
    const size_t n = kMaxClassSize / kMinClassSize;
    for (size_t i = 0; i < n; ++i) {
      all.push_back(pool.alloc(kMinClassSize));
      REQUIRE(all.back());
    }
    CHECK_FALSE(pool.alloc(1));
    CHECK_FALSE(pool.alloc(kMaxClassSize));
    CHECK(pool.stats().failed_allocations == 2);
    all.clear();
    // Every chunk is free again: the arena is recycled for the largest class.
    Buffer big = pool.alloc(kMaxClassSize);
    CHECK(big);
  }
  CHECK(fake.reg_calls() == regs);
  CHECK(pool.stats().registrations == static_cast<uint64_t>(regs));
}

TEST_CASE("buffers are move-only handles that return their chunk exactly once", "[unit][memory]") {
  auto created = SlabPool::create(small_pool(), local_registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  // One chunk of the largest class fits: availability shows who owns it.
  Buffer a = pool.alloc(kMaxClassSize);
  REQUIRE(a);
  std::byte* p = a.data();
  const auto keys = a.keys();

  Buffer b(std::move(a));
  CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move)
  CHECK(b.data() == p);
  CHECK(b.keys() == keys);
  CHECK(b.size() == kMaxClassSize);
  CHECK_FALSE(pool.alloc(kMaxClassSize));

  Buffer c;
  c = std::move(b);
  CHECK_FALSE(b);  // NOLINT(bugprone-use-after-move)
  CHECK(c.data() == p);
  c = std::move(c);  // self-move keeps it
  CHECK(c.data() == p);

  // Move-assigning over a live buffer releases the old chunk first.
  Buffer small = pool.alloc(64);
  REQUIRE_FALSE(small);  // the only chunk is c's
  c = std::move(small);
  CHECK_FALSE(c);
  Buffer again = pool.alloc(kMaxClassSize);
  CHECK(again);
  again.reset();
  again.reset();  // idempotent
  CHECK(pool.alloc(kMaxClassSize));
}

TEST_CASE("a large buffer is a run of largest-class chunks of one arena", "[unit][memory]") {
  testing::FakeRegistrar fake;
  PoolOptions o = small_pool();
  o.pool_bytes = 8 * kMaxClassSize;
  o.arena_bytes = 4 * kMaxClassSize;
  auto created = SlabPool::create(o, fake.registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  const int regs = fake.reg_calls();
  REQUIRE(regs == 2);

  LargeBuffer a = pool.alloc_large(3 * kMaxClassSize - 100);  // three chunks of arena 0
  REQUIRE(a);
  CHECK(a.size() == 3 * kMaxClassSize - 100);
  CHECK(a.capacity() == 3 * kMaxClassSize);
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % kPageSize == 0);
  CHECK(a.keys().lkey != 0);
  std::memset(a.data(), 7, a.capacity());
  // Arena 0 has one chunk left: two more chunks come from arena 1, with its keys.
  LargeBuffer b = pool.alloc_large(2 * kMaxClassSize);
  REQUIRE(b);
  CHECK(b.keys().lkey != a.keys().lkey);
  CHECK((b.data() + b.capacity() <= a.data() || b.data() >= a.data() + a.capacity()));
  // No arena has four contiguous chunks left: refused, counted, nothing registered.
  CHECK_FALSE(pool.alloc_large(4 * kMaxClassSize));
  CHECK(pool.stats().failed_allocations == 1);
  CHECK(fake.reg_calls() == regs);

  // Released, the run's chunks are ordinary largest-class chunks: with the one chunk left in
  // each arena, all eight can be taken.
  a.reset();
  b.reset();
  CHECK_FALSE(a);
  std::vector<Buffer> all;
  for (int i = 0; i < 8; ++i) all.push_back(pool.alloc(kMaxClassSize));
  for (const auto& c : all) CHECK(c);
  CHECK_FALSE(pool.alloc(kMaxClassSize));
  CHECK(fake.reg_calls() == regs);
}

TEST_CASE("small chunks and a large buffer share an arena without overlap", "[unit][memory]") {
  PoolOptions o = small_pool();
  o.pool_bytes = 4 * kMaxClassSize;
  o.arena_bytes = 4 * kMaxClassSize;
  auto created = SlabPool::create(o, local_registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  Buffer small = pool.alloc(100);  // carves a batch of 128 B chunks at the arena's start
  REQUIRE(small);
  LargeBuffer big = pool.alloc_large(2 * kMaxClassSize);
  REQUIRE(big);
  CHECK(big.data() >= small.data() + small.capacity());
  CHECK(big.keys() == small.keys());
  CHECK_FALSE(pool.alloc_large(2 * kMaxClassSize));  // the carved batch took part of a chunk
  LargeBuffer one = pool.alloc_large(kMaxClassSize);
  CHECK(one);
}

TEST_CASE("an exiting thread returns its cached chunks", "[unit][memory]") {
  auto created = SlabPool::create(small_pool(), local_registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  bool all_ok = true;
  std::thread t([&] {
    std::vector<Buffer> bufs;
    for (int i = 0; i < 100; ++i) bufs.push_back(pool.alloc(256));
    for (auto& b : bufs) all_ok = all_ok && static_cast<bool>(b);
  });  // the buffers die on the thread; their chunks land in its cache, then the pool's
  t.join();
  CHECK(all_ok);
  CHECK(pool.stats().allocations[class_of(256)] == 100);
  CHECK(pool.stats().chunks_out == 0);
  // Every chunk is back in the shared lists: the arena can be re-carved for another class.
  CHECK(pool.alloc(kMaxClassSize));
}

TEST_CASE("buffers are registered in the translation table through their arena", "[unit][memory]") {
  TranslationTable table;
  auto created = SlabPool::create(small_pool(), local_registrar(), nullptr, &table);
  REQUIRE(created.ok());
  Buffer b = (*created)->alloc(4096);
  REQUIRE(b);
  auto r = table.lookup(b.data(), b.size());
  REQUIRE(r);
  CHECK(r->keys == b.keys());
  b.reset();         // buffers go before their pool
  created->reset();  // the pool erases its arenas from the table on destruction
  CHECK(table.size() == 0);
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

TEST_CASE("under AddressSanitizer a released buffer's bytes are poisoned", "[unit][memory]") {
  auto created = SlabPool::create(small_pool(), local_registrar());
  REQUIRE(created.ok());
  Buffer b = (*created)->alloc(256);
  REQUIRE(b);
  std::byte* p = b.data();
  CHECK_FALSE(__asan_address_is_poisoned(p + 255));
  b.reset();
  CHECK(__asan_address_is_poisoned(p + 255));
  Buffer again = (*created)->alloc(256);  // LIFO: the same chunk, usable again
  REQUIRE(again.data() == p);
  CHECK_FALSE(__asan_address_is_poisoned(p + 255));
}
#endif
