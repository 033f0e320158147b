// The store's own memory regions on the leader (ReplicationChannel::register_region): the
// declared regions, their registrations in a memory::RegistrationCache (local access only,
// never remotely accessible) and the memory::TranslationTable a value's address is looked
// up in. A value lying wholly inside a registered region is sent by gather from where it
// lies; the window holds a Pin on the registration while a batch references it. A region
// idle for ChannelOptions::region_idle_timeout loses its registration (it stays declared);
// the next value from it is copied and the channel's control thread registers it again.
// See docs/replication.md, "Values in the store's own regions".
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/registration_cache.h"
#include "rdmarepl/memory/translation_table.h"

namespace rdmarepl::replication::detail {

// Values below this size are copied even from a registered region: a gathered value takes
// a batch of its own, which costs more than copying a small value into the open batch.
inline constexpr size_t kRegionGatherMinBytes = 4096;
// Regions declared at once (the registration cache's capacity).
inline constexpr size_t kMaxStoreRegions = 64;

class StoreRegions {
 public:
  // What the data path found for a value.
  struct Lookup {
    enum class Kind : uint8_t { outside, hit, miss };
    Kind kind = Kind::outside;           // outside: in no declared region (or straddling one's end)
    memory::RegistrationCache::Pin pin;  // hit: holds the registration
    uint32_t lkey = 0;
  };

  // `registrar` registers through the channel's transport; `counters` (outlives this)
  // counts the regions' registrations.
  StoreRegions(memory::Registrar registrar, std::chrono::milliseconds idle_timeout,
               memory::Counters* counters);

  // Control plane: checks the range (memory::check_external_region), registers it and
  // declares it. Errors say what to fix.
  Status declare(const void* addr, size_t length);
  // Control plane: stops new values of the region at `addr` from being gathered, then
  // deregisters it once no Pin holds it. Errc::busy while a Pin does (call it again);
  // Errc::not_found when no region starts at `addr`.
  Status retire(const void* addr);
  // Pins held on the region at `addr` (retained batches that reference it).
  [[nodiscard]] uint32_t references(const void* addr) const { return cache_.pins(addr); }
  // Control thread: releases registrations idle for the idle timeout and registers again
  // the declared regions a value missed. Returns how many registrations it made.
  size_t maintain(uint64_t now_ns = mono_ns()) noexcept;

  // Data path: whether any region is declared (one relaxed load).
  [[nodiscard]] bool any() const noexcept { return count_.load(std::memory_order_relaxed) != 0; }
  // Data path: the registration holding all of [p, p + length). No throw, no allocation, no
  // registration.
  Lookup find(const void* p, size_t length) noexcept;

 private:
  struct Declared {
    uintptr_t start = 0;
    size_t length = 0;
    bool retiring = false;            // written under the unique lock
    std::atomic<bool> wanted{false};  // a value missed its registration
  };
  [[nodiscard]] Declared* containing_locked(uintptr_t p, size_t length) const noexcept;

  mutable std::shared_mutex mu_;  // guards declared_ (the data path takes it shared)
  std::vector<std::unique_ptr<Declared>> declared_;
  std::atomic<size_t> count_{0};
  // The table before the cache, which erases its entries from it.
  memory::TranslationTable table_;
  memory::RegistrationCache cache_;
};

}  // namespace rdmarepl::replication::detail
