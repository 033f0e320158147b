// The TCP transport's registration table: rkey -> region for placing the peer's writes,
// lkey -> region for checking our own posts. Shared by a TcpTransport and its connections
// (registrations may outlive neither). Keys are random, non-zero and unique, so a peer cannot
// guess a valid rkey from another one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <unordered_map>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::tcp {

class Registry {
 public:
  struct Entry {
    uintptr_t begin = 0;
    size_t length = 0;
    Access access = Access::local_write;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    uint64_t generation = 0;  // unique per registration: detects an rkey reused after release

    // True when [addr, addr + len) lies wholly inside this region (no overflow).
    [[nodiscard]] bool covers(uintptr_t addr, uint64_t len) const noexcept {
      return addr >= begin && addr - begin <= length && len <= length - (addr - begin);
    }
  };

  Registry();

  // Control plane.
  Result<RegisteredRegion> add(void* addr, size_t length, Access access);
  void remove(const RegisteredRegion& region) noexcept;
  [[nodiscard]] size_t size() const;

  // Data path: true when `lkey` is registered here and covers [addr, addr + len).
  [[nodiscard]] bool check_local(uint32_t lkey, const void* addr, uint64_t len) const noexcept;

  // Placement of a peer's write holds the shared lock while it copies into the region, so
  // that remove() (exclusive) never returns while bytes are still being placed there.
  [[nodiscard]] std::shared_mutex& mutex() const noexcept { return mutex_; }
  // Requires mutex() held (shared or exclusive). nullptr when `rkey` is unknown.
  [[nodiscard]] const Entry* find_remote_locked(uint32_t rkey) const noexcept;

 private:
  uint32_t fresh_key(const std::unordered_map<uint32_t, Entry>& taken);
  uint32_t fresh_lkey();

  mutable std::shared_mutex mutex_;
  std::unordered_map<uint32_t, Entry> by_rkey_;
  std::unordered_map<uint32_t, uint32_t> rkey_of_lkey_;
  std::mt19937 rng_;
  uint64_t next_generation_ = 1;
};

}  // namespace rdmarepl::transport::tcp
