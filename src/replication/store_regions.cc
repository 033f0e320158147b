#include "store_regions.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "rdmarepl/core/log.h"
#include "rdmarepl/memory/external_region.h"

namespace rdmarepl::replication::detail {
namespace {

// Local access only: the NIC reads the region to send from it; no peer ever gets its rkey,
// and without remote access flags it could not use one.
constexpr transport::Access kRegionAccess{};

memory::CacheOptions cache_options(std::chrono::milliseconds idle_timeout) {
  memory::CacheOptions o;
  o.capacity = kMaxStoreRegions;
  o.idle_timeout = idle_timeout;
  return o;
}

}  // namespace

StoreRegions::StoreRegions(memory::Registrar registrar, std::chrono::milliseconds idle_timeout,
                           memory::Counters* counters)
    : table_(counters),
      cache_(std::move(registrar), cache_options(idle_timeout), counters, &table_) {}

StoreRegions::Declared* StoreRegions::containing_locked(uintptr_t p, size_t length) const noexcept {
  for (const auto& d : declared_)
    if (p >= d->start && p - d->start < d->length && length <= d->length - (p - d->start))
      return d.get();
  return nullptr;
}

Status StoreRegions::declare(const void* addr, size_t length) {
  RDMAREPL_TRY(memory::check_external_region(addr, length, SIZE_MAX));
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::unique_lock lock(mu_);
  for (const auto& d : declared_)
    if (a < d->start + d->length && d->start < a + length)
      return Error(d->retiring ? Errc::busy : Errc::already_exists,
                   fmt::format("register_region: [{:#x}, {:#x}) overlaps the registered region "
                               "[{:#x}, {:#x}){}; register disjoint ranges",
                               a, a + length, d->start, d->start + d->length,
                               d->retiring ? ", which is being unregistered (call "
                                             "unregister_region() again until it succeeds)"
                                           : ""));
  if (declared_.size() >= kMaxStoreRegions)
    return Error(Errc::out_of_memory,
                 fmt::format("register_region: {} regions are registered, the most a channel "
                             "keeps; unregister one, or register fewer, larger regions",
                             declared_.size()));
  auto pin = cache_.acquire(addr, length, kRegionAccess);
  if (!pin.ok())
    return Error(pin.error().code(),
                 fmt::format("register_region: {}{}", pin.error().message(),
                             pin.error().is(Errc::too_large)
                                 ? "; register the region in smaller pieces, one "
                                   "register_region() each (a value must lie within one piece)"
                                 : ""));
  auto d = std::make_unique<Declared>();
  d->start = a;
  d->length = length;
  declared_.push_back(std::move(d));
  count_.store(declared_.size(), std::memory_order_relaxed);
  return ok_status();
}

Status StoreRegions::retire(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  {
    std::unique_lock lock(mu_);
    auto it = std::find_if(declared_.begin(), declared_.end(),
                           [&](const auto& d) { return d->start == a; });
    if (it == declared_.end())
      return Error(Errc::not_found,
                   fmt::format("unregister_region: no registered region starts at {:#x}; pass "
                               "the address given to register_region()",
                               a));
    (*it)->retiring = true;  // from here on, find() no longer pins it
  }
  // Pins are dropped by the shards' evictions, under the cache's lock only.
  if (cache_.release(addr) == memory::RegistrationCache::Release::pinned)
    return Error(Errc::busy, fmt::format("unregister_region: {} retained batches still "
                                         "reference the region at {:#x}",
                                         cache_.pins(addr), a));
  std::unique_lock lock(mu_);
  std::erase_if(declared_, [&](const auto& d) { return d->start == a; });
  count_.store(declared_.size(), std::memory_order_relaxed);
  return ok_status();
}

size_t StoreRegions::maintain(uint64_t now_ns) noexcept {
  if (!any()) return 0;
  (void)cache_.reclaim_idle(now_ns);
  size_t made = 0;
  std::shared_lock lock(mu_);
  for (const auto& d : declared_) {
    if (d->retiring || !d->wanted.exchange(false, std::memory_order_relaxed)) continue;
    auto pin = cache_.acquire(reinterpret_cast<const void*>(d->start), d->length, kRegionAccess);
    if (pin.ok()) {
      ++made;
    } else {  // tried again after the next miss
      log::warn(
          "rdmarepl leader: registering the store region [{:#x}, {:#x}) again failed: "
          "{}; its values are copied meanwhile",
          d->start, d->start + d->length, pin.error().message());
    }
  }
  return made;
}

StoreRegions::Lookup StoreRegions::find(const void* p, size_t length) noexcept {
  Lookup r;
  std::shared_lock lock(mu_);
  Declared* d = containing_locked(reinterpret_cast<uintptr_t>(p), length);
  if (d == nullptr || d->retiring) return r;
  if (auto region = table_.lookup(p, length)) {
    if (auto pin = cache_.pin_cached(*region)) {
      r.kind = Lookup::Kind::hit;
      r.lkey = pin.keys().lkey;
      r.pin = std::move(pin);
      return r;
    }
  }
  r.kind = Lookup::Kind::miss;
  d->wanted.store(true, std::memory_order_relaxed);
  return r;
}

}  // namespace rdmarepl::replication::detail
