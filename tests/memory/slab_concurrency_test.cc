// Several threads allocating and freeing at once. Run under ThreadSanitizer by scripts/test.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_registrar.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/memory/translation_table.h"

namespace {

rdmarepl::transport::RegisteredRegion region(uintptr_t addr, size_t length, uint32_t key) {
  rdmarepl::transport::RegisteredRegion r;
  r.addr = reinterpret_cast<void*>(addr);
  r.length = length;
  r.keys = {key, key + 1000};
  return r;
}
const void* at(uintptr_t a) {
  return reinterpret_cast<const void*>(a);
}

}  // namespace

using namespace rdmarepl;
using namespace rdmarepl::memory;

namespace {

struct Span {
  uintptr_t begin;
  uintptr_t end;
  int thread;
};

}  // namespace

TEST_CASE("alloc/free storms from several threads hand out distinct, valid chunks",
          "[unit][memory][concurrency]") {
  testing::FakeRegistrar fake;
  PoolOptions o;
  o.pool_bytes = 16 * kMaxClassSize;
  o.arena_bytes = 4 * kMaxClassSize;
  o.arena.huge_pages = false;
  auto created = SlabPool::create(o, fake.registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  const auto regions = pool.regions();
  const int regs_before = fake.reg_calls();
  const auto stats_before = pool.stats();

  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  std::atomic<int> errors{0};
  std::vector<std::vector<Span>> held(kThreads);
  // Buffers freed by another thread than the one that allocated them.
  std::vector<std::vector<Buffer>> handoff(kThreads);
  std::atomic<int> phase{0};

  auto worker = [&](int id) {
    // Each buffer is filled with its own byte value and checked before it is freed.
    std::vector<std::pair<Buffer, unsigned char>> mine;
    for (int round = 0; round < kRounds; ++round) {
      for (int i = 0; i < 48; ++i) {
        // Mostly small sizes, every class now and then.
        const size_t size = (i % 8 == 7)
                                ? class_size(static_cast<unsigned>((i + round + id) % kNumClasses))
                                : static_cast<size_t>(1 + (i * 37 + round * 11 + id) % 2048);
        Buffer b = pool.alloc(size);
        if (!b) continue;  // exhaustion under contention is allowed; corruption is not
        bool in_arena = false;
        for (const auto& r : regions) {
          auto* base = static_cast<std::byte*>(r.addr);
          if (b.data() >= base && b.data() + b.capacity() <= base + r.length)
            in_arena = r.keys == b.keys();
        }
        if (!in_arena) ++errors;
        const auto value = static_cast<unsigned char>(id * 64 + (round * 48 + i) % 64);
        std::memset(b.data(), value, b.capacity());
        mine.emplace_back(std::move(b), value);
      }
      for (const auto& [b, value] : mine) {
        for (size_t j = 0; j < b.capacity(); j += 61)
          if (b.data()[j] != std::byte{value}) ++errors;
        if (b.data()[b.capacity() - 1] != std::byte{value}) ++errors;
      }
      // Free half, in a different order than allocated.
      std::reverse(mine.begin(), mine.end());
      mine.resize(mine.size() / 2);
    }
    for (auto& [b, value] : mine) {
      held[id].push_back({reinterpret_cast<uintptr_t>(b.data()),
                          reinterpret_cast<uintptr_t>(b.data()) + b.capacity(), id});
      handoff[id].push_back(std::move(b));
    }
    mine.clear();
    phase.fetch_add(1);
    while (phase.load() < kThreads) std::this_thread::yield();
    // Free a neighbour's buffers: chunks migrate between thread caches.
    handoff[(id + 1) % kThreads].clear();
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();

  CHECK(errors.load() == 0);
  // The chunks held at the end of the storm never overlap one another.
  std::vector<Span> all;
  for (auto& h : held) all.insert(all.end(), h.begin(), h.end());
  std::sort(all.begin(), all.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  size_t overlaps = 0;
  for (size_t i = 1; i < all.size(); ++i) overlaps += all[i].begin < all[i - 1].end ? 1 : 0;
  CHECK(overlaps == 0);
  CHECK(all.size() > 0);

  // No registration happened on the data path.
  CHECK(fake.reg_calls() == regs_before);
  const auto after = pool.stats();
  CHECK(after.registrations == stats_before.registrations);
  CHECK(after.total_allocations() > 0);
  // Every thread has exited and returned its cache: every chunk is back in the shared lists.
  CHECK(after.chunks_out == 0);
  CHECK(regions.size() == 4);
}

TEST_CASE("one thread frees what another allocates, through a queue",
          "[unit][memory][concurrency]") {
  auto created = SlabPool::create(
      [] {
        PoolOptions o;
        o.pool_bytes = 2 * kMaxClassSize;
        o.arena_bytes = kMaxClassSize;
        o.arena.huge_pages = false;
        return o;
      }(),
      local_registrar());
  REQUIRE(created.ok());
  SlabPool& pool = **created;
  std::mutex mu;
  std::vector<Buffer> queue;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread consumer([&] {
    for (;;) {
      std::vector<Buffer> batch;
      {
        std::lock_guard lock(mu);
        batch.swap(queue);
      }
      for (auto& b : batch) {
        if (b.data()[0] != std::byte{0x5a}) ++bad;
      }
      if (batch.empty() && done.load()) break;
      std::this_thread::yield();
    }
  });
  int produced = 0;
  for (int i = 0; i < 20000; ++i) {
    Buffer b = pool.alloc(64 + static_cast<size_t>(i % 512));
    if (!b) {
      std::this_thread::yield();  // the consumer still holds the memory
      continue;
    }
    b.data()[0] = std::byte{0x5a};
    std::lock_guard lock(mu);
    queue.push_back(std::move(b));
    ++produced;
  }
  done.store(true);
  consumer.join();
  CHECK(bad.load() == 0);
  CHECK(produced > 0);
}

TEST_CASE("lookups run concurrently with inserts and erases", "[unit][memory][concurrency]") {
  TranslationTable t;
  REQUIRE(t.insert(region(0x100000, 0x1000, 1)).ok());
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      uintptr_t a = 0x200000 + static_cast<uintptr_t>(i % 16) * 0x1000;
      (void)t.insert(region(a, 0x1000, 10));
      t.erase(at(a));
    }
  });
  bool stable = true;
  for (int i = 0; i < 20000; ++i) {
    auto r = t.lookup(at(0x100800));
    stable = stable && r && r->keys.lkey == 1;
  }
  writer.join();
  CHECK(stable);
  CHECK(t.size() == 1);
}
