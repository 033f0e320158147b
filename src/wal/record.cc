#include "rdmarepl/wal/record.h"

#include <cstring>

namespace rdmarepl::wal {

namespace {
uint32_t record_crc(const uint8_t* header, std::string_view key, std::string_view value) {
  uint32_t crc = crc32c::extend(0, header, 24);
  crc = crc32c::extend(crc, key.data(), key.size());
  return crc32c::extend(crc, value.data(), value.size());
}
}  // namespace

size_t encode_record(const RecordView& r, std::span<uint8_t> out) noexcept {
  if (r.key.size() > kMaxKeyLen || r.value.size() > kMaxValueLen) return 0;
  if (r.op != Op::put && r.op != Op::erase) return 0;
  if (r.op == Op::erase && !r.value.empty()) return 0;
  const size_t n = encoded_record_size(r.key.size(), r.value.size());
  if (out.size() < n) return 0;
  uint8_t* p = out.data();
  store_be64(p, r.seq);
  store_be64(p + 8, r.timestamp_ns);
  p[16] = static_cast<uint8_t>(r.op);
  p[17] = 0;
  store_be16(p + 18, static_cast<uint16_t>(r.key.size()));
  store_be32(p + 20, static_cast<uint32_t>(r.value.size()));
  if (!r.key.empty()) std::memcpy(p + kRecordHeaderSize, r.key.data(), r.key.size());
  if (!r.value.empty())
    std::memcpy(p + kRecordHeaderSize + r.key.size(), r.value.data(), r.value.size());
  store_be32(p + 24, crc32c::mask(record_crc(p, r.key, r.value)));
  return n;
}

const char* to_string(DecodeStatus s) noexcept {
  switch (s) {
    case DecodeStatus::ok:
      return "ok";
    case DecodeStatus::truncated:
      return "truncated record";
    case DecodeStatus::bad_checksum:
      return "record checksum mismatch";
    case DecodeStatus::bad_field:
      return "invalid record field";
  }
  return "unknown";
}

DecodeStatus decode_record(std::span<const uint8_t> in, RecordView* out,
                           size_t* consumed) noexcept {
  if (in.size() < kRecordHeaderSize) return DecodeStatus::truncated;
  const uint8_t* p = in.data();
  const size_t key_len = load_be16(p + 18);
  const size_t value_len = load_be32(p + 20);
  // Compared piecewise so that no sum can overflow.
  if (value_len > in.size() - kRecordHeaderSize ||
      key_len > in.size() - kRecordHeaderSize - value_len)
    return DecodeStatus::truncated;
  const auto* base = reinterpret_cast<const char*>(p + kRecordHeaderSize);
  std::string_view key(base, key_len);
  std::string_view value(base + key_len, value_len);
  if (crc32c::unmask(load_be32(p + 24)) != record_crc(p, key, value))
    return DecodeStatus::bad_checksum;
  const auto op = static_cast<Op>(p[16]);
  if ((op != Op::put && op != Op::erase) || p[17] != 0 || (op == Op::erase && value_len != 0))
    return DecodeStatus::bad_field;
  out->seq = load_be64(p);
  out->timestamp_ns = load_be64(p + 8);
  out->op = op;
  out->key = key;
  out->value = value;
  *consumed = kRecordHeaderSize + key_len + value_len;
  return DecodeStatus::ok;
}

bool RecordReader::next(RecordView* out) noexcept {
  if (status_ != DecodeStatus::ok || off_ >= in_.size()) return false;
  size_t used = 0;
  status_ = decode_record(in_.subspan(off_), out, &used);
  if (status_ != DecodeStatus::ok) return false;
  off_ += used;
  ++count_;
  return true;
}

bool BatchBuilder::add(const RecordView& r) {
  const size_t n = encoded_record_size(r.key.size(), r.value.size());
  const size_t old = bytes_.size();
  bytes_.resize(old + n);
  if (encode_record(r, std::span<uint8_t>(bytes_).subspan(old)) != n) {
    bytes_.resize(old);
    return false;
  }
  if (count_ == 0) first_seq_ = r.seq;
  last_seq_ = r.seq;
  ++count_;
  return true;
}

}  // namespace rdmarepl::wal
