// The thread caches of one SlabPool: a thread gets one when it first uses the pool, gives
// it back (drained) when it exits, and a later thread reuses it. Not part of the API.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rdmarepl/memory/detail/slab_detail.h"

namespace rdmarepl::memory::detail {

class CacheSet {
 public:
  // A cache no live thread uses, else a new one (throws std::bad_alloc when out of memory).
  ThreadCache* attach() {
    std::lock_guard lock(mu_);
    for (auto& c : caches_) {
      if (!c->attached) {
        c->attached = true;
        return c.get();
      }
    }
    caches_.push_back(std::make_unique<ThreadCache>());
    caches_.back()->attached = true;
    return caches_.back().get();
  }
  // The thread that used `tc` drained it and exits.
  void detach(ThreadCache* tc) noexcept {
    std::lock_guard lock(mu_);
    tc->attached = false;
  }
  // Adds each class's allocations through the caches to `into`.
  void add_allocations(std::array<uint64_t, kNumClasses>& into) const {
    std::lock_guard lock(mu_);
    for (const auto& tc : caches_) {
      for (unsigned c = 0; c < kNumClasses; ++c)
        into[c] += tc->classes[c].allocations.load(std::memory_order_relaxed);
    }
  }
  // Empties every list without touching the chunks (before their memory is unmapped).
  void clear_lists() noexcept {
    std::lock_guard lock(mu_);
    for (auto& tc : caches_) {
      for (auto& c : tc->classes) c.list.clear();
    }
  }

 private:
  mutable std::mutex mu_;  // guards caches_ and ThreadCache::attached
  std::vector<std::unique_ptr<ThreadCache>> caches_;
};

}  // namespace rdmarepl::memory::detail
