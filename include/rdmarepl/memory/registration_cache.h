// RegistrationCache: registrations of external regions (the store's mmap'd memory), kept
// for reuse. Registering costs microseconds to milliseconds on a NIC, so a region used again
// is served from the cache; a hit is any cached region that contains the requested range
// with at least the requested access. Bounded by `capacity` regions with LRU eviction, and
// unused entries are released after `idle_timeout` by reclaim_idle(). An acquired
// registration is pinned: it is never evicted or expired while a Pin holds it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <list>
#include <map>
#include <mutex>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/memory/translation_table.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::memory {

struct CacheOptions {
  size_t capacity = 64;  // cached registrations; raise it if misses show up as ENOMEM advice
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};
  // The device's max_mr_size: larger regions are refused with Errc::too_large.
  size_t max_region_bytes = std::numeric_limits<size_t>::max();
};

class RegistrationCache {
  struct Entry {
    transport::RegisteredRegion region;
    uint64_t last_used_ns = 0;
    uint32_t pins = 0;
  };
  using Lru = std::list<Entry>;  // front: most recently used

 public:
  // Keeps one cached registration from being evicted or expired while it lives.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept : cache_(o.cache_), entry_(o.entry_) { o.cache_ = nullptr; }
    Pin& operator=(Pin&& o) noexcept {
      if (this != &o) {
        reset();
        cache_ = o.cache_;
        entry_ = o.entry_;
        o.cache_ = nullptr;
      }
      return *this;
    }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin() { reset(); }
    void reset() noexcept;

    [[nodiscard]] explicit operator bool() const noexcept { return cache_ != nullptr; }
    // The whole cached registration (it may be larger than the range asked for).
    [[nodiscard]] const transport::RegisteredRegion& region() const noexcept {
      return entry_->region;
    }
    [[nodiscard]] transport::MemoryKeys keys() const noexcept { return entry_->region.keys; }

   private:
    friend class RegistrationCache;
    Pin(RegistrationCache* cache, Entry* entry) noexcept : cache_(cache), entry_(entry) {}
    RegistrationCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
  };

  // `registrar`, `counters` and `table` as for SlabPool; `table` (may be null) receives every
  // cached registration while it exists.
  RegistrationCache(Registrar registrar, const CacheOptions& options, Counters* counters = nullptr,
                    TranslationTable* table = nullptr);
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;
  // Deregisters everything. Every Pin must be gone.
  ~RegistrationCache();

  // A registration covering [addr, addr + length) with at least `access`: from the cache
  // (a hit) or newly registered after check_external_region() (a miss). Fails with the
  // check's error, the registrar's error, or Errc::out_of_memory when the cache is full of
  // pinned registrations.
  Result<Pin> acquire(const void* addr, size_t length, transport::Access access);

  // Data path: pins the cached registration `region` (as the translation table returned it)
  // while it is still cached, counting a hit; an empty Pin when it was released since.
  // Never registers, never allocates.
  Pin pin_cached(const transport::RegisteredRegion& region) noexcept;
  enum class Release : uint8_t { released, absent, pinned };
  // Deregisters the cached registration that starts at `addr` unless a Pin holds it.
  Release release(const void* addr);
  // Pins held on the cached registration that starts at `addr` (0 when none is cached).
  [[nodiscard]] uint32_t pins(const void* addr) const;

  // Deregisters unpinned entries unused for idle_timeout as of `now_ns`. Returns how many.
  size_t reclaim_idle(uint64_t now_ns = mono_ns());

  [[nodiscard]] size_t size() const;
  [[nodiscard]] const CacheOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Counters& counters() const noexcept { return *counters_; }

 private:
  void unpin(Entry* entry) noexcept;
  Lru::iterator find_locked(uintptr_t addr, size_t length, transport::Access access);
  // Removes an entry from the indexes; the caller deregisters it.
  transport::RegisteredRegion remove_locked(Lru::iterator it);

  const Registrar registrar_;
  const CacheOptions options_;
  Counters own_counters_;
  Counters* const counters_;
  TranslationTable* const table_;

  mutable std::mutex mu_;
  Lru lru_;
  std::map<uintptr_t, Lru::iterator> by_start_;
};

}  // namespace rdmarepl::memory
