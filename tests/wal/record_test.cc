#include "rdmarepl/wal/record.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace rdmarepl;
using namespace rdmarepl::wal;

namespace {
std::vector<uint8_t> encode(const RecordView& r) {
  std::vector<uint8_t> out(encoded_record_size(r.key.size(), r.value.size()));
  REQUIRE(encode_record(r, out) == out.size());
  return out;
}
}  // namespace

TEST_CASE("record round-trips with every field", "[wal][record]") {
  RecordView in{0x0102030405060708ull, 0x1112131415161718ull, Op::put, "k", "value"};
  auto bytes = encode(in);
  // Fields are big-endian at fixed offsets (docs/wal_format.md, "Records").
  CHECK(bytes[0] == 0x01);
  CHECK(bytes[7] == 0x08);
  CHECK(bytes[8] == 0x11);
  CHECK(bytes[16] == 1);
  CHECK(load_be16(&bytes[18]) == 1);
  CHECK(load_be32(&bytes[20]) == 5);
  RecordView out;
  size_t used = 0;
  REQUIRE(decode_record(bytes, &out, &used) == DecodeStatus::ok);
  CHECK(used == bytes.size());
  CHECK(out.seq == in.seq);
  CHECK(out.timestamp_ns == in.timestamp_ns);
  CHECK(out.op == Op::put);
  CHECK(out.key == "k");
  CHECK(out.value == "value");
}

TEST_CASE("record with a key longer than 16 bytes and the maximum key length", "[wal][record]") {
  for (size_t len : {size_t{17}, size_t{1000}, kMaxKeyLen}) {
    std::string key(len, 'x');
    auto bytes = encode({1, 2, Op::put, key, "v"});
    RecordView out;
    size_t used = 0;
    REQUIRE(decode_record(bytes, &out, &used) == DecodeStatus::ok);
    CHECK(out.key == key);
  }
  std::string too_long(kMaxKeyLen + 1, 'x');
  std::vector<uint8_t> buf(encoded_record_size(too_long.size(), 0));
  CHECK(encode_record({1, 2, Op::put, too_long, ""}, buf) == 0);
}

TEST_CASE("record with a zero-length value and an erase", "[wal][record]") {
  auto put = encode({5, 6, Op::put, "key", ""});
  auto erase = encode({7, 8, Op::erase, "key", ""});
  RecordView out;
  size_t used = 0;
  REQUIRE(decode_record(put, &out, &used) == DecodeStatus::ok);
  CHECK(out.value.empty());
  CHECK(out.op == Op::put);
  REQUIRE(decode_record(erase, &out, &used) == DecodeStatus::ok);
  CHECK(out.op == Op::erase);
  std::vector<uint8_t> buf(64);
  CHECK(encode_record({1, 1, Op::erase, "key", "not allowed"}, buf) == 0);
}

TEST_CASE("record decode rejects truncation, flipped bits and bad fields", "[wal][record]") {
  auto bytes = encode({1, 2, Op::put, "key", "value"});
  RecordView out;
  size_t used = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    CHECK(decode_record(std::span<const uint8_t>(bytes.data(), n), &out, &used) ==
          DecodeStatus::truncated);
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x40;
    CHECK(decode_record(bad, &out, &used) != DecodeStatus::ok);
  }
  // An unknown op with a valid CRC is a field error, not a checksum error.
  auto bad_op = bytes;
  bad_op[16] = 9;
  store_be32(&bad_op[24], 0);
  uint32_t crc = crc32c::extend(0, bad_op.data(), 24);
  crc = crc32c::extend(crc, bad_op.data() + kRecordHeaderSize, 8);
  store_be32(&bad_op[24], crc32c::mask(crc));
  CHECK(decode_record(bad_op, &out, &used) == DecodeStatus::bad_field);
  // Lengths near 2^32 must not wrap around.
  auto huge = bytes;
  store_be32(&huge[20], 0xffffffffu);
  CHECK(decode_record(huge, &out, &used) == DecodeStatus::truncated);
}

TEST_CASE("RecordReader walks a batch and stops at damage", "[wal][record]") {
  BatchBuilder b;
  REQUIRE(b.add({10, 1, Op::put, "a", "1"}));
  REQUIRE(b.add({11, 2, Op::erase, "b", ""}));
  REQUIRE(b.add({12, 3, Op::put, std::string(40, 'c'), std::string(300, 'd')}));
  CHECK(b.count() == 3);
  CHECK(b.first_seq() == 10);
  CHECK(b.last_seq() == 12);

  RecordReader rr(b.bytes());
  RecordView r;
  std::vector<uint64_t> seqs;
  while (rr.next(&r)) seqs.push_back(r.seq);
  CHECK(seqs == std::vector<uint64_t>{10, 11, 12});
  CHECK(rr.status() == DecodeStatus::ok);

  std::vector<uint8_t> damaged(b.bytes().begin(), b.bytes().end());
  damaged.at(kRecordHeaderSize + 2 + kRecordHeaderSize) ^= 1;  // in the second record's key
  RecordReader bad(damaged);
  size_t n = 0;
  while (bad.next(&r)) ++n;
  CHECK(n == 1);
  CHECK(bad.status() == DecodeStatus::bad_checksum);
  CHECK(bad.offset() == kRecordHeaderSize + 2);
}
