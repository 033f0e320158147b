// Key -> shard mapping. Stable across processes and builds (FNV-1a, not std::hash), so that
// a key always travels on the same shard and its writes keep their order.
#pragma once

#include <cstdint>
#include <string_view>

namespace rdmarepl::replication {

constexpr uint64_t fnv1a64(std::string_view bytes) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Precondition: shard_count > 0.
constexpr uint32_t shard_of(std::string_view key, uint32_t shard_count) noexcept {
  return static_cast<uint32_t>(fnv1a64(key) % shard_count);
}

}  // namespace rdmarepl::replication
