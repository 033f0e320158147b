// Arena: one large mmap'd region, registered once. The move-only owner of both the mapping
// and the registration: destruction deregisters, then unmaps.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::memory {

inline constexpr size_t kPageSize = size_t{4} << 10;      // what ibv_reg_mr needs at least
inline constexpr size_t kHugePageSize = size_t{2} << 20;  // x86-64 / arm64 PMD huge page

struct ArenaOptions {
  // Try MAP_HUGETLB 2 MiB pages first (fewer TLB and NIC translation entries); fall back to
  // 4 KiB pages with a logged reason when the system has none reserved.
  bool huge_pages = true;
  transport::Access access = transport::Access::local_write;
};

class Arena {
 public:
  // Maps at least `bytes` (rounded up to the page size used) and registers the mapping
  // through `registrar` unless it registers nothing. `registrar` and `counters` (may be
  // null) must outlive the arena.
  static Result<Arena> create(size_t bytes, const ArenaOptions& options, const Registrar& registrar,
                              Counters* counters);

  Arena() = default;
  Arena(Arena&& other) noexcept { steal(other); }
  Arena& operator=(Arena&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() { release(); }

  [[nodiscard]] std::byte* base() const noexcept { return base_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] bool huge_pages() const noexcept { return huge_; }
  [[nodiscard]] bool registered() const noexcept { return registered_; }
  // The registration (addr/length cover the whole mapping; keys are zero if unregistered).
  [[nodiscard]] const transport::RegisteredRegion& region() const noexcept { return region_; }
  [[nodiscard]] bool contains(const void* p) const noexcept {
    auto* b = static_cast<const std::byte*>(p);
    return b >= base_ && b < base_ + size_;
  }

 private:
  void release() noexcept;
  void steal(Arena& other) noexcept;

  std::byte* base_ = nullptr;
  size_t size_ = 0;
  bool huge_ = false;
  bool registered_ = false;
  transport::RegisteredRegion region_{};
  const Registrar* registrar_ = nullptr;
  Counters* counters_ = nullptr;
};

}  // namespace rdmarepl::memory
