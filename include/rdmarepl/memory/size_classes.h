// Size classes of the slab allocator: powers of two from 64 B to 1 MiB.
//
// 64 B is the smallest class because a free chunk stores its list hook and owning arena
// (16 B) inside itself and because a cache line is the unit the NIC and the CPU move;
// 1 MiB covers the largest value plus header the replication layer batches. Powers of two
// keep class lookup to one bit scan and waste at most half a chunk per buffer.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace rdmarepl::memory {

inline constexpr unsigned kMinClassShift = 6;   // 64 B
inline constexpr unsigned kMaxClassShift = 20;  // 1 MiB
inline constexpr unsigned kNumClasses = kMaxClassShift - kMinClassShift + 1;
inline constexpr size_t kMinClassSize = size_t{1} << kMinClassShift;
inline constexpr size_t kMaxClassSize = size_t{1} << kMaxClassShift;
static_assert(kNumClasses == 15);

// Returned by class_of() for sizes above kMaxClassSize.
inline constexpr unsigned kNoClass = kNumClasses;

// The smallest class whose chunks hold `size` bytes (size 0 maps to the smallest class).
constexpr unsigned class_of(size_t size) noexcept {
  if (size <= kMinClassSize) return 0;
  if (size > kMaxClassSize) return kNoClass;
  return static_cast<unsigned>(std::bit_width(size - 1)) - kMinClassShift;
}

constexpr size_t class_size(unsigned cls) noexcept {
  return size_t{1} << (cls + kMinClassShift);
}

static_assert(class_of(0) == 0 && class_of(64) == 0 && class_of(65) == 1);
static_assert(class_of(kMaxClassSize) == kNumClasses - 1 &&
              class_of(kMaxClassSize + 1) == kNoClass);
static_assert(class_size(kNumClasses - 1) == kMaxClassSize);

// How many free chunks of a class one thread keeps for itself before it returns half to the
// shared pool: about 256 KiB per class, between 2 and 64 chunks. 64 chunks amortise one
// mutex round trip over 32 allocations; the byte bound stops a thread hoarding large chunks.
constexpr uint32_t thread_cache_capacity(unsigned cls) noexcept {
  size_t n = (size_t{256} << 10) / class_size(cls);
  if (n < 2) n = 2;
  if (n > 64) n = 64;
  return static_cast<uint32_t>(n);
}

}  // namespace rdmarepl::memory
