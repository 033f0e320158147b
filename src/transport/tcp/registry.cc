#include "registry.h"

#include <fmt/format.h>

namespace rdmarepl::transport::tcp {

Registry::Registry() : rng_(std::random_device{}()) {}

uint32_t Registry::fresh_key(const std::unordered_map<uint32_t, Entry>& taken) {
  for (;;) {
    uint32_t k = static_cast<uint32_t>(rng_());
    if (k != 0 && !taken.contains(k)) return k;
  }
}

uint32_t Registry::fresh_lkey() {
  for (;;) {
    uint32_t k = static_cast<uint32_t>(rng_());
    if (k != 0 && !rkey_of_lkey_.contains(k)) return k;
  }
}

Result<RegisteredRegion> Registry::add(void* addr, size_t length, Access access) {
  if (addr == nullptr || length == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("cannot register {} bytes at {}: pass a non-null address and a "
                             "non-zero length",
                             length, addr));
  }
  auto begin = reinterpret_cast<uintptr_t>(addr);
  if (begin + length < begin) {
    return Error(Errc::invalid_argument,
                 fmt::format("cannot register {} bytes at {}: the range wraps around the address "
                             "space",
                             length, addr));
  }
  std::unique_lock lock(mutex_);
  Entry e{begin, length, access, 0, 0, next_generation_++};
  e.rkey = fresh_key(by_rkey_);
  e.lkey = fresh_lkey();
  by_rkey_.emplace(e.rkey, e);
  rkey_of_lkey_.emplace(e.lkey, e.rkey);
  RegisteredRegion r;
  r.addr = addr;
  r.length = length;
  r.keys = MemoryKeys{e.lkey, e.rkey};
  r.access = access;
  r.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(e.generation));
  return r;
}

void Registry::remove(const RegisteredRegion& region) noexcept {
  std::unique_lock lock(mutex_);
  auto it = by_rkey_.find(region.keys.rkey);
  if (it == by_rkey_.end() || it->second.lkey != region.keys.lkey) return;
  rkey_of_lkey_.erase(it->second.lkey);
  by_rkey_.erase(it);
}

size_t Registry::size() const {
  std::shared_lock lock(mutex_);
  return by_rkey_.size();
}

bool Registry::check_local(uint32_t lkey, const void* addr, uint64_t len) const noexcept {
  std::shared_lock lock(mutex_);
  auto l = rkey_of_lkey_.find(lkey);
  if (l == rkey_of_lkey_.end()) return false;
  auto it = by_rkey_.find(l->second);
  return it != by_rkey_.end() && it->second.covers(reinterpret_cast<uintptr_t>(addr), len);
}

const Registry::Entry* Registry::find_remote_locked(uint32_t rkey) const noexcept {
  auto it = by_rkey_.find(rkey);
  return it == by_rkey_.end() ? nullptr : &it->second;
}

}  // namespace rdmarepl::transport::tcp
