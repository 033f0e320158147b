// The registered arenas of one SlabPool and their carving: which arenas exist, how far each
// is carved, and re-carving an arena whose chunks are all back. Not part of the API.
//
// Lock order (stated once, for the pool): a class's SharedClass::mu, in index order when
// several are held, then this set's mutex. Every method that carves or recycles takes this
// set's mutex itself; the caller holds the class mutexes the operation needs.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/arena.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/detail/slab_detail.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/memory/translation_table.h"

namespace rdmarepl::memory::detail {

class ArenaSet {
 public:
  // `table` may be null; if given, every arena is in it while it exists.
  explicit ArenaSet(TranslationTable* table) noexcept : table_(table) {}
  // Forgets the arenas in the table, then deregisters and unmaps them. No chunk of them may
  // be in use, nor in any list that will be touched again.
  ~ArenaSet();
  ArenaSet(const ArenaSet&) = delete;
  ArenaSet& operator=(const ArenaSet&) = delete;

  // Maps and registers one more arena of `bytes` (control plane).
  Status add(size_t bytes, const ArenaOptions& options, const Registrar& registrar,
             Counters* counters);

  // Carves up to `max` chunks of class `cls` from the first arena with room into `into`
  // (counted out of their arena). Chunks of a page or more are page-aligned for the NIC.
  // Returns how many (0: every arena is carved to its end). The caller holds the class's
  // mutex.
  size_t carve(FreeList& into, unsigned cls, size_t max) noexcept;
  // A page-aligned run of `bytes` (a multiple of kMaxClassSize) not yet carved from one
  // arena, counted out as that many largest-class chunks; {nullptr, nullptr} when no arena has that
  // much left. The caller holds the largest class's mutex (the run goes back as chunks of that
  // class).
  std::pair<std::byte*, ArenaState*> carve_run(size_t bytes) noexcept;
  // Finds an arena that was carved and whose chunks are all back in the shared lists, calls
  // `strip(arena)` to take its chunks out of those lists, and makes it carvable afresh.
  // The caller holds every class mutex. False when no arena qualifies.
  template <class Strip>
  bool recycle_one(Strip&& strip) noexcept {
    std::lock_guard lock(mu_);
    for (auto& a : arenas_) {
      if (a->carved == 0 || a->out.load(std::memory_order_relaxed) != 0) continue;
      strip(a.get());
      // Chunk boundaries change: clear the old layout's poisoning before carving afresh.
      RDMAREPL_MEMORY_UNPOISON(a->arena.base(), a->arena.size());
      a->carved = 0;
      return true;
    }
    return false;
  }

  [[nodiscard]] size_t count() const;
  [[nodiscard]] size_t capacity_bytes() const;  // sum of arena sizes
  [[nodiscard]] uint64_t chunks_out() const;    // over every arena
  [[nodiscard]] std::vector<transport::RegisteredRegion> regions() const;

 private:
  TranslationTable* const table_;
  mutable std::mutex mu_;  // guards arenas_ (the vector, and each arena's `carved`)
  std::vector<std::unique_ptr<ArenaState>> arenas_;
};

}  // namespace rdmarepl::memory::detail
