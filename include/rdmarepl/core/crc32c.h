// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected), as used by iSCSI (RFC 3720) and
// by every checksum in rdmarepl's wire and WAL formats. Uses the SSE4.2 crc32 instruction
// when the CPU has it (checked once at run time), a table-driven fallback otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmarepl::crc32c {

// Returns the CRC32C of data[0, n) continuing from `crc` (the CRC of the bytes before).
// extend(0, p, n) is the CRC of a fresh buffer.
uint32_t extend(uint32_t crc, const void* data, size_t n) noexcept;

inline uint32_t value(const void* data, size_t n) noexcept {
  return extend(0, data, n);
}

// True when the hardware path is in use.
bool hardware_accelerated() noexcept;

// Masking as in leveldb: a CRC stored next to data that itself contains CRCs is masked so
// that computing the CRC of a string with an embedded CRC stays well distributed.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr uint32_t mask(uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}
constexpr uint32_t unmask(uint32_t masked) noexcept {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace rdmarepl::crc32c
