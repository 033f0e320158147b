#include "rdmarepl/replication/detail/batch_format.h"

#include <cstring>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::replication {
namespace {

// Header field offsets (docs/wire_format.md, "Replication batches").
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 4;
constexpr size_t kOffFlags = 5;
constexpr size_t kOffShard = 6;
constexpr size_t kOffCount = 8;
constexpr size_t kOffPayloadLen = 12;
constexpr size_t kOffFirstSeq = 16;
constexpr size_t kOffCrc = 24;
constexpr size_t kOffReserved = 28;
constexpr size_t kCrcCovered = kOffCrc;  // the CRC covers header bytes [0, 24) and the payload
static_assert(kOffReserved + 4 == kBatchHeaderSize);

uint32_t batch_crc(const std::byte* header, const std::byte* payload, size_t payload_len) noexcept {
  uint32_t crc = crc32c::extend(0, header, kCrcCovered);
  crc = crc32c::extend(crc, payload, payload_len);
  return crc32c::mask(crc);
}

// Writes a record's header and key at `p`; returns where its value goes.
std::byte* encode_record_head(std::byte* p, Op op, std::string_view key, uint32_t value_len,
                              uint64_t seq, uint64_t timestamp, uint8_t flags = 0) noexcept {
  p[kRecOp] = static_cast<std::byte>(op);
  p[kRecFlags] = static_cast<std::byte>(flags);
  store_be16(p + kRecReserved, 0);
  store_be32(p + kRecKeyLen, static_cast<uint32_t>(key.size()));
  store_be32(p + kRecValueLen, value_len);
  store_be64(p + kRecSeq, seq);
  store_be64(p + kRecTimestamp, timestamp);
  p += kRecordHeaderSize;
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  return p + key.size();
}

}  // namespace

void BatchBuilder::add(Op op, std::string_view key, std::string_view value, uint64_t timestamp,
                       uint8_t flags) noexcept {
  std::byte* v = encode_record_head(base_ + size_, op, key, static_cast<uint32_t>(value.size()),
                                    first_seq_ + count_, timestamp, flags);
  if (!value.empty()) std::memcpy(v, value.data(), value.size());
  size_ += record_size(key.size(), value.size());
  ++count_;
}

void BatchBuilder::add_head(Op op, std::string_view key, uint32_t value_len,
                            uint64_t timestamp) noexcept {
  (void)encode_record_head(base_ + size_, op, key, value_len, first_seq_ + count_, timestamp);
  size_ += record_size(key.size(), value_len);
  external_ = value_len;
  ++count_;
}

size_t BatchBuilder::seal_gathered(std::span<const std::byte> value) noexcept {
  std::byte* h = base_;
  const auto payload_len = static_cast<uint32_t>(size_ - kBatchHeaderSize);
  write_header(h, payload_len);
  uint32_t crc = crc32c::extend(0, h, kCrcCovered);
  crc = crc32c::extend(crc, h + kBatchHeaderSize, encoded() - kBatchHeaderSize);
  crc = crc32c::extend(crc, value.data(), value.size());
  store_be32(h + kOffCrc, crc32c::mask(crc));
  return align_batch(size_);
}

void BatchBuilder::write_header(std::byte* h, uint32_t payload_len) const noexcept {
  store_be32(h + kOffMagic, kBatchMagic);
  h[kOffVersion] = static_cast<std::byte>(kBatchVersion);
  h[kOffFlags] = std::byte{0};
  store_be16(h + kOffShard, shard_);
  store_be32(h + kOffCount, count_);
  store_be32(h + kOffPayloadLen, payload_len);
  store_be64(h + kOffFirstSeq, first_seq_);
  store_be32(h + kOffCrc, 0);
  store_be32(h + kOffReserved, 0);
}

size_t BatchBuilder::seal() noexcept {
  std::byte* h = base_;
  const auto payload_len = static_cast<uint32_t>(size_ - kBatchHeaderSize);
  write_header(h, payload_len);
  store_be32(h + kOffCrc, batch_crc(h, h + kBatchHeaderSize, payload_len));
  const size_t padded = align_batch(size_);
  if (padded > size_) std::memset(base_ + size_, 0, padded - size_);
  return padded;
}

std::string_view describe(BatchError e) noexcept {
  switch (e) {
    case BatchError::ok:
      return "ok";
    case BatchError::truncated:
      return "batch truncated (shorter than its header or payload_len)";
    case BatchError::bad_magic:
      return "bad batch magic (not a replication batch)";
    case BatchError::bad_version:
      return "unsupported batch version";
    case BatchError::bad_reserved:
      return "non-zero reserved field or flags in batch";
    case BatchError::bad_length:
      return "batch payload_len disagrees with its records";
    case BatchError::bad_checksum:
      return "batch CRC32C mismatch";
    case BatchError::bad_record:
      return "malformed record (unknown op, erase with value, key too long, unknown flag)";
    case BatchError::bad_group:
      return "batch ends inside a write group (its last record says another follows)";
    case BatchError::bad_seq:
      return "record seqs are not consecutive from first_seq";
  }
  return "unknown batch error";
}

BatchError parse_batch(std::span<const std::byte> bytes, BatchView& out) noexcept {
  if (bytes.size() < kBatchHeaderSize) return BatchError::truncated;
  const std::byte* h = bytes.data();
  if (load_be32(h + kOffMagic) != kBatchMagic) return BatchError::bad_magic;
  BatchHeader hdr;
  hdr.version = static_cast<uint8_t>(h[kOffVersion]);
  if (hdr.version != kBatchVersion) return BatchError::bad_version;
  hdr.flags = static_cast<uint8_t>(h[kOffFlags]);
  hdr.shard = load_be16(h + kOffShard);
  hdr.record_count = load_be32(h + kOffCount);
  hdr.payload_len = load_be32(h + kOffPayloadLen);
  hdr.first_seq = load_be64(h + kOffFirstSeq);
  hdr.crc = load_be32(h + kOffCrc);
  if (hdr.payload_len > bytes.size() - kBatchHeaderSize) return BatchError::truncated;
  const std::byte* payload = h + kBatchHeaderSize;
  if (batch_crc(h, payload, hdr.payload_len) != hdr.crc) return BatchError::bad_checksum;
  // Checked after the CRC so that a random flip reports as a checksum error; a batch that
  // passes the CRC but has these set comes from a newer or broken encoder.
  if (hdr.flags != 0 || load_be32(h + kOffReserved) != 0) return BatchError::bad_reserved;

  // Walk every record before anything is applied: bounds, op, seq continuity.
  const std::byte* p = payload;
  const std::byte* end = payload + hdr.payload_len;
  bool group_open = false;  // the previous record said another of its group follows
  for (uint32_t i = 0; i < hdr.record_count; ++i) {
    if (static_cast<size_t>(end - p) < kRecordHeaderSize) return BatchError::bad_length;
    const auto op = static_cast<uint8_t>(p[kRecOp]);
    const uint32_t key_len = load_be32(p + kRecKeyLen);
    const uint32_t value_len = load_be32(p + kRecValueLen);
    if (op != static_cast<uint8_t>(Op::put) && op != static_cast<uint8_t>(Op::erase))
      return BatchError::bad_record;
    const auto flags = static_cast<uint8_t>(p[kRecFlags]);
    if ((flags & ~kRecKnownFlags) != 0 || load_be16(p + kRecReserved) != 0)
      return BatchError::bad_record;
    group_open = (flags & kRecGroupNext) != 0;
    if (key_len > kMaxKeyBytes) return BatchError::bad_record;
    if (op == static_cast<uint8_t>(Op::erase) && value_len != 0) return BatchError::bad_record;
    if (load_be64(p + kRecSeq) != hdr.first_seq + i) return BatchError::bad_seq;
    const uint64_t body = uint64_t{key_len} + value_len;
    if (body > static_cast<uint64_t>(end - p) - kRecordHeaderSize) return BatchError::bad_length;
    p += kRecordHeaderSize + body;
  }
  if (p != end) return BatchError::bad_length;
  if (group_open) return BatchError::bad_group;
  out.header = hdr;
  out.payload = payload;
  return BatchError::ok;
}

}  // namespace rdmarepl::replication
