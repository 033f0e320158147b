// Values of the YCSB driver carry their key's version and a checksum of (key, version), so
// that a reader can tell a value the leader wrote for that key from anything else:
//   u64 version (big-endian) | u32 crc32c(key, version) | filler up to the value size
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::ycsb {

inline constexpr size_t kValueHeader = 12;

inline uint32_t value_crc(std::string_view key, uint64_t version) {
  uint8_t v[8];
  store_be64(v, version);
  return crc32c::extend(crc32c::value(key.data(), key.size()), v, sizeof v);
}

inline std::string make_value(std::string_view key, uint64_t version, size_t size) {
  std::string out(std::max(size, kValueHeader), static_cast<char>('a' + version % 26));
  store_be64(out.data(), version);
  store_be32(out.data() + 8, value_crc(key, version));
  return out;
}

// The version a value carries, or nullopt when it is not one written for `key`.
inline std::optional<uint64_t> check_value(std::string_view key, std::string_view value) {
  if (value.size() < kValueHeader) return std::nullopt;
  const uint64_t version = load_be64(value.data());
  if (load_be32(value.data() + 8) != value_crc(key, version)) return std::nullopt;
  return version;
}

}  // namespace rdmarepl::ycsb
