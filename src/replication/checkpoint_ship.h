// Shipping a checkpoint to a follower the leader's log no longer reaches: the header of each
// chunk (written at offset 0 of the follower's large-record buffer with an immediate of kind
// ImmKind::checkpoint), the follower's reply codes, and the token bucket that rate-limits
// catch-up. See docs/wire_format.md ("Checkpoint shipping") and docs/replication.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rdmarepl::replication::detail {

// Chunk header, big-endian, followed by `length` payload bytes:
//   magic u32 ("RCSC") | flags u32 (bit 0: last chunk) | checkpoint id u64 |
//   total u64 | offset u64 | length u32 | payload crc u32 | header crc u32 | reserved u32
// payload crc: masked CRC32C of the checkpoint payload bytes [0, offset + length) (running,
// so on the last chunk it covers the whole payload); header crc: masked CRC32C of bytes
// [0, 40) of the header.
inline constexpr uint32_t kChunkMagic = 0x52435343u;
inline constexpr size_t kChunkHeaderSize = 48;
inline constexpr uint32_t kChunkLast = 1;

struct ChunkHeader {
  uint32_t flags = 0;
  uint64_t id = 0;      // the frame number of the checkpoint in the leader's log
  uint64_t total = 0;   // payload bytes of the whole checkpoint
  uint64_t offset = 0;  // of this chunk's payload in the checkpoint payload
  uint32_t length = 0;  // payload bytes in this chunk
  uint32_t crc = 0;     // unmasked running CRC32C of payload [0, offset + length)
  [[nodiscard]] bool last() const noexcept { return (flags & kChunkLast) != 0; }
};

void encode_chunk_header(const ChunkHeader& h, std::span<std::byte, kChunkHeaderSize> out) noexcept;
// Checks magic, header crc and the field invariants (offset + length <= total; the last
// flag set exactly when offset + length == total). False with `why` otherwise.
bool decode_chunk_header(std::span<const std::byte> in, ChunkHeader& out,
                         std::string& why) noexcept;

// The follower's reply to a chunk: the argument of a zero-length write with an immediate of
// kind ImmKind::checkpoint.
enum class ShipReply : uint32_t {
  chunk_ok = 0,    // stored; send the next chunk
  installed = 1,   // the last chunk verified and the checkpoint is installed
  no_restore = 2,  // the follower's store has no restore hook (SnapshottableStore)
  failed = 3,      // installing failed (see the follower's log)
};

// Token bucket for catch-up traffic: `rate` bytes per second with up to `burst` bytes
// saved up. take() never refuses: it charges the bytes (the balance may go negative) and
// says how long to wait before sending them, so the long-run rate stays at `rate`.
class TokenBucket {
 public:
  TokenBucket() = default;  // unlimited
  TokenBucket(uint64_t rate, uint64_t burst, uint64_t now_ns) noexcept;
  // Nanoseconds to wait before sending `bytes` at `now_ns` (0 when unlimited).
  uint64_t take(uint64_t bytes, uint64_t now_ns) noexcept;
  [[nodiscard]] int64_t balance() const noexcept { return tokens_; }
  [[nodiscard]] uint64_t rate() const noexcept { return rate_; }

 private:
  void refill(uint64_t now_ns) noexcept;
  uint64_t rate_ = 0;
  int64_t burst_ = 0;
  int64_t tokens_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace rdmarepl::replication::detail
