// Build-time configuration shared by every layer.
#pragma once

#define RDMAREPL_VERSION_MAJOR 0
#define RDMAREPL_VERSION_MINOR 1
#define RDMAREPL_VERSION_PATCH 0

// Branch hints for the data path.
#define RDMAREPL_LIKELY(x) __builtin_expect(!!(x), 1)
#define RDMAREPL_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace rdmarepl {

// Cache line size assumed for padding of shared counters (x86-64 and most ARM servers).
inline constexpr unsigned kCacheLine = 64;

}  // namespace rdmarepl
