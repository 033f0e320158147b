#include "rdmarepl/memory/registration_cache.h"

#include <fmt/format.h>

#include <vector>

#include "rdmarepl/core/log.h"
#include "rdmarepl/memory/external_region.h"

namespace rdmarepl::memory {
namespace {

bool covers(transport::Access have, transport::Access want) {
  return (static_cast<uint32_t>(have) & static_cast<uint32_t>(want)) == static_cast<uint32_t>(want);
}

}  // namespace

void RegistrationCache::Pin::reset() noexcept {
  if (cache_ == nullptr) return;
  cache_->unpin(entry_);
  cache_ = nullptr;
}

RegistrationCache::RegistrationCache(Registrar registrar, const CacheOptions& options,
                                     Counters* counters, TranslationTable* table)
    : registrar_(std::move(registrar)),
      options_(options),
      counters_(counters != nullptr ? counters : &own_counters_),
      table_(table) {}

RegistrationCache::~RegistrationCache() {
  std::lock_guard lock(mu_);
  while (!lru_.empty()) {
    auto region = remove_locked(std::prev(lru_.end()));
    deregister_counted(registrar_, counters_, region);
  }
}

void RegistrationCache::unpin(Entry* entry) noexcept {
  std::lock_guard lock(mu_);
  --entry->pins;
  entry->last_used_ns = mono_ns();
}

RegistrationCache::Lru::iterator RegistrationCache::find_locked(uintptr_t addr, size_t length,
                                                                transport::Access access) {
  // Cached regions never overlap, so only the last one starting at or before addr can
  // contain it.
  auto it = by_start_.upper_bound(addr);
  if (it == by_start_.begin()) return lru_.end();
  auto entry = std::prev(it)->second;
  const uintptr_t end = entry->region.start() + entry->region.length;
  if (addr >= end || length > end - addr || !covers(entry->region.access, access))
    return lru_.end();
  return entry;
}

transport::RegisteredRegion RegistrationCache::remove_locked(Lru::iterator it) {
  auto region = it->region;
  by_start_.erase(region.start());
  if (table_ != nullptr) table_->erase(region.addr);
  lru_.erase(it);
  return region;
}

Result<RegistrationCache::Pin> RegistrationCache::acquire(const void* addr, size_t length,
                                                          transport::Access access) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::vector<transport::RegisteredRegion> dropped;  // deregistered after unlocking
  Result<Pin> result = Error(Errc::invalid_argument, "");
  {
    std::lock_guard lock(mu_);
    if (auto it = find_locked(a, length, access); it != lru_.end()) {
      lru_.splice(lru_.begin(), lru_, it);
      ++it->pins;
      it->last_used_ns = mono_ns();
      counters_->add(counters_->cache_hits);
      return Pin(this, &*it);
    }
    counters_->add(counters_->cache_misses);
    RDMAREPL_TRY(check_external_region(addr, length, options_.max_region_bytes));

    // Cached regions overlapping the new one (e.g. a smaller earlier registration, or one
    // with less access) are replaced by it; a pinned one cannot be.
    std::vector<Lru::iterator> overlapping;
    auto first = by_start_.upper_bound(a);
    if (first != by_start_.begin()) --first;
    for (auto it = first; it != by_start_.end() && it->first < a + length; ++it) {
      const auto& r = it->second->region;
      if (it->first + r.length <= a) continue;
      if (it->second->pins != 0)
        return Error(Errc::busy,
                     fmt::format("memory: [{:#x}, {:#x}) overlaps the cached registration "
                                 "[{:#x}, {:#x}) which is in use; release it first or register "
                                 "the same range",
                                 a, a + length, it->first, it->first + r.length));
      overlapping.push_back(it->second);
    }
    for (auto it : overlapping) {
      dropped.push_back(remove_locked(it));
      counters_->add(counters_->cache_evictions);
    }
    // Make room: evict the least recently used unpinned entries.
    for (auto it = lru_.end(); lru_.size() >= options_.capacity && it != lru_.begin();) {
      --it;
      if (it->pins != 0) continue;
      auto victim = it++;
      dropped.push_back(remove_locked(victim));
      counters_->add(counters_->cache_evictions);
    }
    if (lru_.size() >= options_.capacity) {
      result = Error(Errc::out_of_memory,
                     fmt::format("memory: the registration cache is full ({} registrations, all "
                                 "in use); raise CacheOptions::capacity or release pins sooner",
                                 lru_.size()));
    } else {
      auto region =
          register_counted(registrar_, counters_, const_cast<void*>(addr), length, access);
      if (!region.ok()) {
        const auto& e = region.error();
        result = Error(e.code(), fmt::format("memory: registering [{:#x}, {:#x}) failed: {}", a,
                                             a + length, e.message()));
      } else {
        lru_.push_front(Entry{*region, mono_ns(), 1});
        by_start_.emplace(a, lru_.begin());
        if (table_ != nullptr) {
          auto st = table_->insert(*region);
          if (!st.ok()) log::warn("memory: {}", st.error().message());
        }
        result = Pin(this, &lru_.front());
      }
    }
  }
  for (const auto& r : dropped) deregister_counted(registrar_, counters_, r);
  return result;
}

RegistrationCache::Pin RegistrationCache::pin_cached(
    const transport::RegisteredRegion& region) noexcept {
  std::lock_guard lock(mu_);
  auto it = by_start_.find(region.start());
  if (it == by_start_.end() || it->second->region.length != region.length ||
      it->second->region.keys.lkey != region.keys.lkey)
    return {};
  Entry& e = *it->second;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++e.pins;
  e.last_used_ns = mono_ns();
  counters_->add(counters_->cache_hits);
  return Pin(this, &e);
}

RegistrationCache::Release RegistrationCache::release(const void* addr) {
  transport::RegisteredRegion region;
  {
    std::lock_guard lock(mu_);
    auto it = by_start_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == by_start_.end()) return Release::absent;
    if (it->second->pins != 0) return Release::pinned;
    region = remove_locked(it->second);
  }
  deregister_counted(registrar_, counters_, region);
  return Release::released;
}

uint32_t RegistrationCache::pins(const void* addr) const {
  std::lock_guard lock(mu_);
  auto it = by_start_.find(reinterpret_cast<uintptr_t>(addr));
  return it == by_start_.end() ? 0 : it->second->pins;
}

size_t RegistrationCache::reclaim_idle(uint64_t now_ns) {
  const auto timeout_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.idle_timeout).count());
  std::vector<transport::RegisteredRegion> dropped;
  {
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      auto cur = it++;
      if (cur->pins == 0 && now_ns >= cur->last_used_ns &&
          now_ns - cur->last_used_ns >= timeout_ns) {
        dropped.push_back(remove_locked(cur));
        counters_->add(counters_->cache_expirations);
      }
    }
  }
  for (const auto& r : dropped) deregister_counted(registrar_, counters_, r);
  return dropped.size();
}

size_t RegistrationCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace rdmarepl::memory
