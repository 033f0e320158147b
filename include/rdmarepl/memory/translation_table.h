// The address translation table: any address inside a registered region -> that region
// (and so its lkey/rkey). Lookups are O(log n) (std::map::upper_bound) under a shared lock:
// the table is read on every translation and written only when a region is registered or
// released, so readers never wait for each other.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::memory {

class TranslationTable {
 public:
  // `counters` (may be null: the table keeps its own) receives translation hits and misses;
  // it must outlive the table.
  explicit TranslationTable(Counters* counters = nullptr)
      : counters_(counters != nullptr ? counters : &own_counters_) {}
  TranslationTable(const TranslationTable&) = delete;
  TranslationTable& operator=(const TranslationTable&) = delete;

  // Adds a region. Fails with Errc::already_exists if it overlaps one already present and
  // with Errc::invalid_argument if it is empty.
  Status insert(const transport::RegisteredRegion& region);
  // Removes the region that starts at `addr`. Returns false if there is none.
  bool erase(const void* addr);

  // The region containing byte `p`, if any.
  [[nodiscard]] std::optional<transport::RegisteredRegion> lookup(const void* p) const;
  // The region containing all of [p, p + length), if one region does (length 0: as lookup(p)).
  [[nodiscard]] std::optional<transport::RegisteredRegion> lookup(const void* p,
                                                                  size_t length) const;

  [[nodiscard]] size_t size() const;
  [[nodiscard]] const Counters& counters() const noexcept { return *counters_; }

 private:
  std::optional<transport::RegisteredRegion> find_locked(uintptr_t p, size_t length) const;

  mutable std::shared_mutex mu_;
  std::map<uintptr_t, transport::RegisteredRegion> by_start_;
  Counters own_counters_;
  Counters* counters_;
};

}  // namespace rdmarepl::memory
