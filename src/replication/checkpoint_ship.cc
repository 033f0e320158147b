#include "checkpoint_ship.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::replication::detail {

namespace {
constexpr size_t kHeaderCrcCovers = 40;
constexpr uint64_t kNsPerSec = 1'000'000'000;
// 128-bit intermediates: bytes x nanoseconds overflows 64 bits after a few seconds at GB/s.
__extension__ typedef unsigned __int128 u128;
}  // namespace

void encode_chunk_header(const ChunkHeader& h,
                         std::span<std::byte, kChunkHeaderSize> out) noexcept {
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  store_be32(p, kChunkMagic);
  store_be32(p + 4, h.flags);
  store_be64(p + 8, h.id);
  store_be64(p + 16, h.total);
  store_be64(p + 24, h.offset);
  store_be32(p + 32, h.length);
  store_be32(p + 36, crc32c::mask(h.crc));
  store_be32(p + 40, crc32c::mask(crc32c::value(p, kHeaderCrcCovers)));
  store_be32(p + 44, 0);
}

bool decode_chunk_header(std::span<const std::byte> in, ChunkHeader& out,
                         std::string& why) noexcept {
  if (in.size() < kChunkHeaderSize) {
    why = fmt::format("checkpoint chunk of {} bytes is shorter than its {}-byte header", in.size(),
                      kChunkHeaderSize);
    return false;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  if (load_be32(p) != kChunkMagic) {
    why = fmt::format("checkpoint chunk has magic 0x{:08x}, expected 0x{:08x}", load_be32(p),
                      kChunkMagic);
    return false;
  }
  if (crc32c::unmask(load_be32(p + 40)) != crc32c::value(p, kHeaderCrcCovers)) {
    why = "checkpoint chunk header fails its CRC32C";
    return false;
  }
  out.flags = load_be32(p + 4);
  out.id = load_be64(p + 8);
  out.total = load_be64(p + 16);
  out.offset = load_be64(p + 24);
  out.length = load_be32(p + 32);
  out.crc = crc32c::unmask(load_be32(p + 36));
  const uint64_t end = out.offset + out.length;
  if (end < out.offset || end > out.total || out.last() != (end == out.total) ||
      (out.flags & ~kChunkLast) != 0) {
    why = fmt::format(
        "checkpoint chunk header is inconsistent: offset {} + length {} against total {}, "
        "flags 0x{:x}",
        out.offset, out.length, out.total, out.flags);
    return false;
  }
  return true;
}

TokenBucket::TokenBucket(uint64_t rate, uint64_t burst, uint64_t now_ns) noexcept
    : rate_(rate),
      burst_(static_cast<int64_t>(std::min<uint64_t>(burst, INT64_MAX / 2))),
      tokens_(burst_),
      last_ns_(now_ns) {}

void TokenBucket::refill(uint64_t now_ns) noexcept {
  if (now_ns <= last_ns_) return;
  const auto elapsed = static_cast<u128>(now_ns - last_ns_);
  const auto add = static_cast<uint64_t>(
      std::min<u128>(elapsed * rate_ / kNsPerSec, static_cast<uint64_t>(INT64_MAX)));
  if (tokens_ + static_cast<int64_t>(std::min<uint64_t>(add, INT64_MAX / 2)) >= burst_) {
    tokens_ = burst_;
    last_ns_ = now_ns;
    return;
  }
  if (add == 0) return;  // keep the fraction: the clock advances only by whole bytes
  tokens_ += static_cast<int64_t>(add);
  last_ns_ += static_cast<uint64_t>(static_cast<u128>(add) * kNsPerSec / rate_);
}

uint64_t TokenBucket::take(uint64_t bytes, uint64_t now_ns) noexcept {
  if (rate_ == 0) return 0;
  refill(now_ns);
  tokens_ -= static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX / 2));
  if (tokens_ >= 0) return 0;
  const auto debt = static_cast<u128>(-tokens_);
  return static_cast<uint64_t>((debt * kNsPerSec + rate_ - 1) / rate_);
}

}  // namespace rdmarepl::replication::detail
