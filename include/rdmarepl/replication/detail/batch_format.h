// The replication batch: the unit that is encoded once into registered memory, written into
// a follower's ring with write-with-immediate, and appended to the WAL unchanged (one frame
// per batch). It is the product's one record format, on the wire and in the log.
// docs/wire_format.md ("Replication batches") is the truth; these constants mirror it.
//
// batch  := header(32) record* padding(to a multiple of 8)
// header := magic u32 | version u8 | flags u8 | shard u16 | record_count u32 |
//           payload_len u32 | first_seq u64 | crc u32 | reserved u32 (zero)
// record := op u8 | flags u8 | reserved u16 (zero) | key_len u32 | value_len u32 |
//           seq u64 | timestamp u64 | key bytes | value bytes
// flags:     bit 0 (kRecGroupNext): the next record belongs to the same write group; every
//            other bit zero. A batch never ends inside a group.
// All integers big-endian. crc = crc32c::mask(crc32c(header[0,24) ++ payload)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/replication/record.h"

namespace rdmarepl::replication {

inline constexpr uint32_t kBatchMagic = 0x52504C42u;  // "RPLB"
inline constexpr uint8_t kBatchVersion = 1;
inline constexpr size_t kBatchHeaderSize = 32;
inline constexpr size_t kRecordHeaderSize = 28;
// Batches start at multiples of 8 in rings so that an offset fits the immediate in 8-byte
// units (docs/wire_format.md, "Immediates").
inline constexpr size_t kBatchAlign = 8;

// Record field offsets (docs/wire_format.md, "Replication batches"). They are here, with the
// cursor that reads them, so that the follower's apply loop inlines (detail/apply_records.h).
inline constexpr size_t kRecOp = 0;
inline constexpr size_t kRecFlags = 1;
inline constexpr size_t kRecReserved = 2;
inline constexpr size_t kRecKeyLen = 4;
inline constexpr size_t kRecValueLen = 8;
inline constexpr size_t kRecSeq = 12;
inline constexpr size_t kRecTimestamp = 20;
static_assert(kRecTimestamp + 8 == kRecordHeaderSize);
// Record flag: the record is followed, in the same batch, by another record of its write group
// (replicate_group()); the last record of a group, and a single write, have it clear.
inline constexpr uint8_t kRecGroupNext = 0x01;
inline constexpr uint8_t kRecKnownFlags = kRecGroupNext;
static_assert(kRecFlags == 1 && kRecKnownFlags == 0x01,
              "docs/wire_format.md documents the record flags byte at offset 1, bit 0");

constexpr size_t align_batch(size_t n) noexcept {
  return (n + kBatchAlign - 1) & ~(kBatchAlign - 1);
}
constexpr size_t record_size(size_t key_len, size_t value_len) noexcept {
  return kRecordHeaderSize + key_len + value_len;
}
// Bytes a batch holding exactly one record of this size occupies in a ring.
constexpr size_t single_record_batch_size(size_t key_len, size_t value_len) noexcept {
  return align_batch(kBatchHeaderSize + record_size(key_len, value_len));
}

struct BatchHeader {
  uint8_t version = kBatchVersion;
  uint8_t flags = 0;
  uint16_t shard = 0;
  uint32_t record_count = 0;
  uint32_t payload_len = 0;
  uint64_t first_seq = 0;
  uint32_t crc = 0;  // masked, as stored
};

// Encodes records straight into caller-owned (registered) memory. No allocation.
// Usage: start(); add() while fits(); seal() writes the header and checksum.
class BatchBuilder {
 public:
  // `base` must stay valid and untouched by others until seal() returns.
  void start(std::byte* base, size_t capacity, uint16_t shard, uint64_t first_seq) noexcept {
    base_ = base;
    capacity_ = capacity;
    shard_ = shard;
    first_seq_ = first_seq;
    size_ = kBatchHeaderSize;
    count_ = 0;
    external_ = 0;
  }
  [[nodiscard]] bool fits(size_t key_len, size_t value_len) const noexcept {
    return align_batch(size_ + record_size(key_len, value_len)) <= capacity_;
  }
  // Appends a record with seq first_seq + count(). Precondition: fits(). `flags`: 0, or
  // kRecGroupNext for every record of a write group but its last.
  void add(Op op, std::string_view key, std::string_view value, uint64_t timestamp,
           uint8_t flags = 0) noexcept;
  // Writes the header (with checksum) and zero padding; returns the padded batch size.
  size_t seal() noexcept;

  // Zero-copy (a batch of one record whose value is gathered from elsewhere): writes the
  // record's header and key only; its `value_len` value bytes follow them on the wire and
  // in the log. Precondition: the batch is empty. encoded() is then the bytes written here.
  void add_head(Op op, std::string_view key, uint32_t value_len, uint64_t timestamp) noexcept;
  // Seals such a batch: header and checksum over the encoded head and `value` (read once).
  // Writes no padding (the sender gathers it). Returns the padded size of the whole batch.
  size_t seal_gathered(std::span<const std::byte> value) noexcept;
  // Bytes encoded at base(): size() less a gathered value.
  [[nodiscard]] size_t encoded() const noexcept { return size_ - external_; }

  [[nodiscard]] size_t size() const noexcept { return size_; }  // unpadded, header included
  [[nodiscard]] uint32_t count() const noexcept { return count_; }
  [[nodiscard]] uint64_t first_seq() const noexcept { return first_seq_; }
  [[nodiscard]] uint64_t next_seq() const noexcept { return first_seq_ + count_; }
  [[nodiscard]] std::byte* base() const noexcept { return base_; }

 private:
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  uint64_t first_seq_ = 0;
  uint32_t count_ = 0;
  uint16_t shard_ = 0;
  size_t external_ = 0;  // value bytes of a gathered record, not at base()

  // Every header field but the checksum (written as zero).
  void write_header(std::byte* h, uint32_t payload_len) const noexcept;
};

// Why a batch was rejected. Every value is a protocol error for the connection it came on.
enum class BatchError : uint8_t {
  ok = 0,
  truncated,  // fewer bytes than the header or than header + payload_len
  bad_magic,
  bad_version,
  bad_reserved,  // a reserved field or flag is not zero
  bad_length,    // payload_len disagrees with the records, or a record overruns the payload
  bad_checksum,
  bad_record,  // unknown op, erase with a value, key longer than kMaxKeyBytes, unknown flag
  bad_group,   // the batch ends inside a write group (its last record has kRecGroupNext)
  bad_seq,     // record seqs are not first_seq, first_seq + 1, ...
};
std::string_view describe(BatchError e) noexcept;

// A checked batch. parse_batch() validates everything (header, checksum, every record's
// bounds and seq) before returning ok, so a caller never applies part of a bad batch.
struct BatchView {
  BatchHeader header;
  const std::byte* payload = nullptr;
  [[nodiscard]] size_t size() const noexcept { return kBatchHeaderSize + header.payload_len; }
  [[nodiscard]] size_t padded_size() const noexcept { return align_batch(size()); }
};

// Parses the batch at the start of `bytes` (which may extend past it).
BatchError parse_batch(std::span<const std::byte> bytes, BatchView& out) noexcept;

// Walks the records of a batch that parse_batch() accepted.
class RecordCursor {
 public:
  explicit RecordCursor(const BatchView& batch) noexcept
      : p_(batch.payload),
        end_(batch.payload + batch.header.payload_len),
        shard_(batch.header.shard) {}
  // Fills `out` and returns true, or returns false at the end. Inline: it runs once per
  // applied record.
  bool next(Record& out) noexcept {
    if (p_ >= end_) return false;
    group_next_ = (static_cast<uint8_t>(p_[kRecFlags]) & kRecGroupNext) != 0;
    const uint32_t key_len = load_be32(p_ + kRecKeyLen);
    const uint32_t value_len = load_be32(p_ + kRecValueLen);
    out.op = static_cast<Op>(p_[kRecOp]);
    out.seq = load_be64(p_ + kRecSeq);
    out.timestamp = load_be64(p_ + kRecTimestamp);
    out.shard = shard_;
    const auto* k = reinterpret_cast<const char*>(p_ + kRecordHeaderSize);
    out.key = std::string_view(k, key_len);
    out.value = std::string_view(k + key_len, value_len);
    p_ += kRecordHeaderSize + key_len + value_len;
    return true;
  }
  // Whether the record next() returned last is followed by another of its write group.
  [[nodiscard]] bool group_next() const noexcept { return group_next_; }
  // Where the next record starts (the end of the payload after the last).
  [[nodiscard]] const std::byte* position() const noexcept { return p_; }
  [[nodiscard]] uint16_t shard() const noexcept { return shard_; }
  // A cursor over the records in [begin, end) of a checked batch of `shard`.
  RecordCursor(const std::byte* begin, const std::byte* end, uint16_t shard) noexcept
      : p_(begin), end_(end), shard_(shard) {}

 private:
  const std::byte* p_;
  const std::byte* end_;
  uint16_t shard_;
  bool group_next_ = false;
};

}  // namespace rdmarepl::replication
