#include "rdmarepl/memory/translation_table.h"

#include <fmt/format.h>

#include <mutex>

namespace rdmarepl::memory {

Status TranslationTable::insert(const transport::RegisteredRegion& region) {
  if (region.length == 0 || region.addr == nullptr)
    return Error(Errc::invalid_argument,
                 fmt::format("memory: cannot add the empty region at {} to the translation "
                             "table; register a non-empty range",
                             region.addr));
  const uintptr_t start = region.start();
  const uintptr_t end = start + region.length;
  std::unique_lock lock(mu_);
  auto next = by_start_.lower_bound(start);
  auto clash = [&](const transport::RegisteredRegion& other) {
    return Error(Errc::already_exists,
                 fmt::format("memory: region [{:#x}, {:#x}) overlaps the registered region "
                             "[{:#x}, {:#x}); release that one first or register a disjoint "
                             "range",
                             start, end, other.start(), other.start() + other.length));
  };
  if (next != by_start_.end() && next->first < end) return clash(next->second);
  if (next != by_start_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > start) return clash(prev->second);
  }
  by_start_.emplace_hint(next, start, region);
  return ok_status();
}

bool TranslationTable::erase(const void* addr) {
  std::unique_lock lock(mu_);
  return by_start_.erase(reinterpret_cast<uintptr_t>(addr)) != 0;
}

std::optional<transport::RegisteredRegion> TranslationTable::find_locked(uintptr_t p,
                                                                         size_t length) const {
  auto it = by_start_.upper_bound(p);  // first region starting after p
  if (it == by_start_.begin()) return std::nullopt;
  --it;  // the last region starting at or before p
  const uintptr_t end = it->first + it->second.length;
  if (p >= end) return std::nullopt;
  if (length > end - p) return std::nullopt;  // the range runs past the region's end
  return it->second;
}

std::optional<transport::RegisteredRegion> TranslationTable::lookup(const void* p) const {
  return lookup(p, 0);
}

std::optional<transport::RegisteredRegion> TranslationTable::lookup(const void* p,
                                                                    size_t length) const {
  std::optional<transport::RegisteredRegion> found;
  {
    std::shared_lock lock(mu_);
    found = find_locked(reinterpret_cast<uintptr_t>(p), length);
  }
  counters_->add(found ? counters_->translation_hits : counters_->translation_misses);
  return found;
}

size_t TranslationTable::size() const {
  std::shared_lock lock(mu_);
  return by_start_.size();
}

}  // namespace rdmarepl::memory
