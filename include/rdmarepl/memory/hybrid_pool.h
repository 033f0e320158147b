// HybridPool: the memory layer as the replication channel sees it, after the source's
// hybrid pool. Blocks that travel over RDMA come from registered slabs; everything else from
// an unregistered slab over ordinary mmap'd memory; the store's own regions are registered
// on demand through a registration cache. One translation table maps any address in any of
// these registrations to its keys, and one set of counters covers them all.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/memory/registration_cache.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/memory/translation_table.h"

namespace rdmarepl::memory {

struct HybridOptions {
  // The registered pool (2x the working set by default).
  PoolOptions registered{};
  // The ordinary pool: unregistered, grows by mapping arenas when exhausted.
  PoolOptions ordinary = default_ordinary();
  CacheOptions cache{};

  static PoolOptions default_ordinary() {
    PoolOptions o;
    o.pool_bytes = size_t{8} << 20;
    o.arena_bytes = size_t{8} << 20;
    o.arena.huge_pages = false;
    o.grow_on_exhaustion = true;
    return o;
  }
};

class HybridPool {
 public:
  // `registrar` registers the registered pool's arenas and the cached external regions.
  static Result<std::unique_ptr<HybridPool>> create(const HybridOptions& options,
                                                    Registrar registrar);
  HybridPool(const HybridPool&) = delete;
  HybridPool& operator=(const HybridPool&) = delete;
  ~HybridPool() = default;

  // Data path: a block from the registered slabs if it will be read or written by the NIC,
  // from ordinary memory otherwise (its keys are zero). Empty on exhaustion.
  [[nodiscard]] Buffer alloc(size_t size, bool needs_remote_access) noexcept {
    return needs_remote_access ? registered_->alloc(size) : ordinary_->alloc(size);
  }

  // Control plane: registers (or finds in the cache) an external region such as the store's
  // mmap'd memory. See RegistrationCache::acquire and check_external_region.
  Result<RegistrationCache::Pin> register_external(const void* addr, size_t length,
                                                   transport::Access access) {
    return cache_->acquire(addr, length, access);
  }

  // The registration containing [p, p + length), whichever part of the pool it belongs to.
  [[nodiscard]] std::optional<transport::RegisteredRegion> translate(const void* p,
                                                                     size_t length = 0) const {
    return table_->lookup(p, length);
  }

  // Control plane: one more registered arena of at least `bytes`.
  Status grow(size_t bytes) { return registered_->grow(bytes); }
  // Control plane, to be called periodically (e.g. once a second): releases idle arenas of
  // both pools and idle cached registrations. Returns how many were released.
  size_t reclaim_idle(uint64_t now_ns = mono_ns()) {
    return registered_->reclaim_idle(now_ns) + ordinary_->reclaim_idle(now_ns) +
           cache_->reclaim_idle(now_ns);
  }

  // Counters of the whole pool: registrations and translation/cache hits from the shared
  // counters, allocations and failures summed over both slabs.
  [[nodiscard]] MemoryStats stats() const;

  [[nodiscard]] SlabPool& registered_pool() noexcept { return *registered_; }
  [[nodiscard]] SlabPool& ordinary_pool() noexcept { return *ordinary_; }
  [[nodiscard]] RegistrationCache& cache() noexcept { return *cache_; }
  [[nodiscard]] const TranslationTable& table() const noexcept { return *table_; }

 private:
  HybridPool() = default;

  // Declaration order is destruction order reversed: the pools and the cache go first, then
  // the table they erase themselves from, then the counters everything reports to.
  Counters counters_;
  Counters ordinary_counters_;
  std::unique_ptr<TranslationTable> table_;
  std::unique_ptr<RegistrationCache> cache_;
  std::unique_ptr<SlabPool> registered_;
  std::unique_ptr<SlabPool> ordinary_;
};

}  // namespace rdmarepl::memory
