// Byte order for every on-wire and on-disk integer: network byte order (big-endian).
// docs/wire_format.md and docs/wal_format.md refer to these helpers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace rdmarepl {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "mixed-endian platforms are not supported");

constexpr uint16_t host_to_net16(uint16_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(v);
  return v;
}
constexpr uint32_t host_to_net32(uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}
constexpr uint64_t host_to_net64(uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(v);
  return v;
}
constexpr uint16_t net_to_host16(uint16_t v) noexcept {
  return host_to_net16(v);
}
constexpr uint32_t net_to_host32(uint32_t v) noexcept {
  return host_to_net32(v);
}
constexpr uint64_t net_to_host64(uint64_t v) noexcept {
  return host_to_net64(v);
}

// Store / load big-endian integers at unaligned positions in a byte buffer.
inline void store_be16(void* p, uint16_t v) noexcept {
  v = host_to_net16(v);
  std::memcpy(p, &v, sizeof v);
}
inline void store_be32(void* p, uint32_t v) noexcept {
  v = host_to_net32(v);
  std::memcpy(p, &v, sizeof v);
}
inline void store_be64(void* p, uint64_t v) noexcept {
  v = host_to_net64(v);
  std::memcpy(p, &v, sizeof v);
}
inline uint16_t load_be16(const void* p) noexcept {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return net_to_host16(v);
}
inline uint32_t load_be32(const void* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return net_to_host32(v);
}
inline uint64_t load_be64(const void* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return net_to_host64(v);
}

}  // namespace rdmarepl
