// Constants and header codecs of the on-disk WAL format. docs/wal_format.md is the
// specification; this header mirrors it. Every integer is big-endian (core/byte_order.h);
// every CRC is a masked CRC32C (core/crc32c.h).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::wal {

// ---------------------------------------------------------------- segment header
// magic u32 | version u16 | header_len u16 | segment_number u64 | first_seq u64 |
// reserved u32 (0) | masked crc32c of bytes [0, 28) u32
inline constexpr uint32_t kSegmentMagic = 0x52574c47;  // "RWLG"
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 32;

// ---------------------------------------------------------------- frame header
// masked crc32c u32 | length u32 | type u8 | reserved u8[3] (0) | record_count u32 |
// first_seq u64 | last_seq u64 | payload[length]
// The CRC covers bytes [4, 32 + length): every header field after it and the payload.
inline constexpr size_t kFrameHeaderSize = 32;

// 64 MiB: bounds what a reader allocates for one frame, so a corrupt length can never make
// it read (or allocate) more; also the largest batch the layer above may append.
inline constexpr uint32_t kMaxFramePayload = 64u << 20;

enum class FrameType : uint8_t {
  zero = 0,   // never written: preallocated space (all header bytes are zero)
  batch = 1,  // one encoded batch of records
  end = 2,    // last frame of a completed segment: the log continues in the next one;
              // its first_seq/last_seq are the lowest/highest seq of the segment's
              // batches and record_count the number of batch frames
};

struct SegmentHeader {
  uint64_t segment_number = 0;
  // The highest seq appended before this segment was created, plus one (informational:
  // batches may arrive in any seq order, see docs/wal_format.md).
  uint64_t first_seq = 0;

  void encode(uint8_t* out) const noexcept {
    store_be32(out, kSegmentMagic);
    store_be16(out + 4, kFormatVersion);
    store_be16(out + 6, kSegmentHeaderSize);
    store_be64(out + 8, segment_number);
    store_be64(out + 16, first_seq);
    store_be32(out + 24, 0);
    store_be32(out + 28, crc32c::mask(crc32c::value(out, 28)));
  }
};

enum class HeaderCheck { ok, bad_magic, bad_version, bad_checksum };

// Checks and decodes kSegmentHeaderSize bytes at `in`.
inline HeaderCheck decode_segment_header(const uint8_t* in, SegmentHeader* out) noexcept {
  if (load_be32(in) != kSegmentMagic) return HeaderCheck::bad_magic;
  if (crc32c::unmask(load_be32(in + 28)) != crc32c::value(in, 28)) return HeaderCheck::bad_checksum;
  if (load_be16(in + 4) != kFormatVersion || load_be16(in + 6) != kSegmentHeaderSize)
    return HeaderCheck::bad_version;
  out->segment_number = load_be64(in + 8);
  out->first_seq = load_be64(in + 16);
  return HeaderCheck::ok;
}

// The fields of a frame header (everything but the CRC).
struct FrameHeader {
  uint32_t length = 0;
  FrameType type = FrameType::zero;
  uint32_t record_count = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;

  // Writes the header with the CRC of header + payload[0, length).
  void encode(uint8_t* out, const uint8_t* payload) const noexcept {
    // iovec's base is not const; encode() only reads through it.
    const iovec whole{const_cast<uint8_t*>(payload), length};
    encode(out, &whole, 1);
  }
  // The same for a payload held in pieces (their lengths add up to `length`): the frame is
  // byte for byte the one a contiguous payload gives.
  void encode(uint8_t* out, const iovec* pieces, size_t count) const noexcept {
    store_be32(out + 4, length);
    out[8] = static_cast<uint8_t>(type);
    out[9] = out[10] = out[11] = 0;
    store_be32(out + 12, record_count);
    store_be64(out + 16, first_seq);
    store_be64(out + 24, last_seq);
    uint32_t crc = crc32c::extend(0, out + 4, kFrameHeaderSize - 4);
    for (size_t i = 0; i < count; ++i)
      crc = crc32c::extend(crc, pieces[i].iov_base, pieces[i].iov_len);
    store_be32(out, crc32c::mask(crc));
  }

  // Decodes the fields without checking the CRC (see frame_crc_ok).
  static FrameHeader decode(const uint8_t* in) noexcept {
    FrameHeader h;
    h.length = load_be32(in + 4);
    h.type = static_cast<FrameType>(in[8]);
    h.record_count = load_be32(in + 12);
    h.first_seq = load_be64(in + 16);
    h.last_seq = load_be64(in + 24);
    return h;
  }
};

// True when the stored CRC at `frame` matches header + payload; `frame` must hold
// kFrameHeaderSize + length bytes.
inline bool frame_crc_ok(const uint8_t* frame, uint32_t length) noexcept {
  uint32_t crc = crc32c::extend(0, frame + 4, kFrameHeaderSize - 4 + length);
  return crc32c::unmask(load_be32(frame)) == crc;
}

}  // namespace rdmarepl::wal
