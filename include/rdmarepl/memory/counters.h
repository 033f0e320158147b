// Counters of the memory layer: relaxed atomics bumped on the control plane and on slow
// paths, read as a MemoryStats snapshot. Per-class allocation counts live in the per-thread
// caches (owner-written, no locked instruction on the data path) and are summed on read.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "rdmarepl/memory/size_classes.h"

namespace rdmarepl::memory {

// A point-in-time copy of every counter. Fields are monotonic totals unless marked "now".
struct MemoryStats {
  uint64_t registrations = 0;  // successful register calls
  uint64_t deregistrations = 0;
  uint64_t registration_failures = 0;
  uint64_t bytes_registered = 0;                    // now
  uint64_t bytes_registered_total = 0;              // sum of all lengths ever registered
  std::array<uint64_t, kNumClasses> allocations{};  // per size class
  uint64_t failed_allocations = 0;                  // exhaustion or size above the largest class
  uint64_t arenas = 0;                              // now
  uint64_t bytes_mapped = 0;                        // now, arenas of this pool
  uint64_t chunks_out = 0;        // now: chunks not in the pool's shared lists (live or in caches)
  uint64_t translation_hits = 0;  // TranslationTable lookups that found a region
  uint64_t translation_misses = 0;
  uint64_t cache_hits = 0;  // RegistrationCache acquires served from the cache
  uint64_t cache_misses = 0;
  uint64_t cache_evictions = 0;    // LRU evictions (capacity)
  uint64_t cache_expirations = 0;  // idle-timeout releases

  [[nodiscard]] uint64_t total_allocations() const noexcept {
    uint64_t n = 0;
    for (auto a : allocations) n += a;
    return n;
  }
  // The source's `mr_cache_hit_rate`: hits / (hits + misses), 0 before the first lookup.
  [[nodiscard]] double cache_hit_rate() const noexcept {
    uint64_t n = cache_hits + cache_misses;
    return n == 0 ? 0.0 : static_cast<double>(cache_hits) / static_cast<double>(n);
  }
  [[nodiscard]] double translation_hit_rate() const noexcept {
    uint64_t n = translation_hits + translation_misses;
    return n == 0 ? 0.0 : static_cast<double>(translation_hits) / static_cast<double>(n);
  }
};

// Shared by the pools, the translation table and the registration cache of one owner.
class Counters {
 public:
  void add(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  void sub(std::atomic<uint64_t>& c, uint64_t n) noexcept {
    c.fetch_sub(n, std::memory_order_relaxed);
  }

  // Copies every counter here into `out` (allocations are filled by the pools).
  void fill(MemoryStats& out) const noexcept {
    auto ld = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    out.registrations = ld(registrations);
    out.deregistrations = ld(deregistrations);
    out.registration_failures = ld(registration_failures);
    out.bytes_registered = ld(bytes_registered);
    out.bytes_registered_total = ld(bytes_registered_total);
    out.failed_allocations = ld(failed_allocations);
    out.arenas = ld(arenas);
    out.bytes_mapped = ld(bytes_mapped);
    out.translation_hits = ld(translation_hits);
    out.translation_misses = ld(translation_misses);
    out.cache_hits = ld(cache_hits);
    out.cache_misses = ld(cache_misses);
    out.cache_evictions = ld(cache_evictions);
    out.cache_expirations = ld(cache_expirations);
  }

  std::atomic<uint64_t> registrations{0};
  std::atomic<uint64_t> deregistrations{0};
  std::atomic<uint64_t> registration_failures{0};
  std::atomic<uint64_t> bytes_registered{0};
  std::atomic<uint64_t> bytes_registered_total{0};
  std::atomic<uint64_t> failed_allocations{0};
  std::atomic<uint64_t> arenas{0};
  std::atomic<uint64_t> bytes_mapped{0};
  std::atomic<uint64_t> translation_hits{0};
  std::atomic<uint64_t> translation_misses{0};
  std::atomic<uint64_t> cache_hits{0};
  std::atomic<uint64_t> cache_misses{0};
  std::atomic<uint64_t> cache_evictions{0};
  std::atomic<uint64_t> cache_expirations{0};
};

}  // namespace rdmarepl::memory
