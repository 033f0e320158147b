// The WAL's record codec: how one key-value operation is laid out inside a batch payload.
// docs/wal_format.md ("Records") is the specification. The WAL itself never looks inside a
// batch (it frames opaque bytes); this codec is here so that the layer above and recovery
// tools share one definition of a record.
//
// record := seq_id u64 | timestamp u64 | op u8 | reserved u8 (0) | key_len u16 |
//           value_len u32 | masked crc32c u32 | key[key_len] | value[value_len]
// The CRC covers bytes [0, 24) (every field before it), the key and the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "rdmarepl/wal/format.h"

namespace rdmarepl::wal {

inline constexpr size_t kRecordHeaderSize = 28;
inline constexpr size_t kMaxKeyLen = 0xffff;
// A record must fit in one frame.
inline constexpr size_t kMaxValueLen = kMaxFramePayload - kRecordHeaderSize;

enum class Op : uint8_t { put = 1, erase = 2 };

// A record whose key and value point into someone else's bytes (a batch payload, or the
// caller's buffers when encoding).
struct RecordView {
  uint64_t seq = 0;
  uint64_t timestamp_ns = 0;  // wall clock (core/clock.h wall_ns), informational
  Op op = Op::put;
  std::string_view key;
  std::string_view value;  // empty for Op::erase
};

constexpr size_t encoded_record_size(size_t key_len, size_t value_len) noexcept {
  return kRecordHeaderSize + key_len + value_len;
}

// Encodes `r` into `out`. Returns the bytes written, or 0 when `out` is too small, the key
// is longer than kMaxKeyLen, the value longer than kMaxValueLen, or an erase has a value.
size_t encode_record(const RecordView& r, std::span<uint8_t> out) noexcept;

enum class DecodeStatus : uint8_t {
  ok,
  truncated,     // fewer bytes than the header or the lengths it names
  bad_checksum,  // the record's CRC does not match
  bad_field,     // unknown op, non-zero reserved byte, or an erase with a value
};
const char* to_string(DecodeStatus s) noexcept;

// Decodes the record at the start of `in`. On ok, `*out` points into `in` and `*consumed`
// is the record's size. Never reads outside `in`.
DecodeStatus decode_record(std::span<const uint8_t> in, RecordView* out, size_t* consumed) noexcept;

// Walks the records of a batch payload. Usage:
//   RecordReader rr(payload);
//   RecordView r;
//   while (rr.next(&r)) use(r);
//   if (rr.status() != DecodeStatus::ok) ... the payload is damaged at rr.offset()
class RecordReader {
 public:
  explicit RecordReader(std::span<const uint8_t> payload) noexcept : in_(payload) {}
  bool next(RecordView* out) noexcept;
  [[nodiscard]] DecodeStatus status() const noexcept { return status_; }
  [[nodiscard]] size_t offset() const noexcept { return off_; }
  [[nodiscard]] size_t count() const noexcept { return count_; }

 private:
  std::span<const uint8_t> in_;
  size_t off_ = 0;
  size_t count_ = 0;
  DecodeStatus status_ = DecodeStatus::ok;
};

// Builds a batch payload in a growable buffer (for tests, tools and benchmarks; the
// replication layer encodes straight into registered memory instead).
class BatchBuilder {
 public:
  // Returns false (and adds nothing) when encode_record would reject `r`.
  bool add(const RecordView& r);
  void clear() noexcept {
    bytes_.clear();
    count_ = 0;
  }
  [[nodiscard]] std::span<const uint8_t> bytes() const noexcept { return bytes_; }
  [[nodiscard]] uint32_t count() const noexcept { return count_; }
  [[nodiscard]] uint64_t first_seq() const noexcept { return first_seq_; }
  [[nodiscard]] uint64_t last_seq() const noexcept { return last_seq_; }

 private:
  std::vector<uint8_t> bytes_;
  uint32_t count_ = 0;
  uint64_t first_seq_ = 0;
  uint64_t last_seq_ = 0;
};

}  // namespace rdmarepl::wal
