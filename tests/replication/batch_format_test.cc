#include "rdmarepl/replication/detail/batch_format.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/replication/detail/apply_records.h"
#include "rdmarepl/replication/record_group.h"

using namespace rdmarepl::replication;

namespace {

struct Input {
  Op op;
  std::string key;
  std::string value;
};

// Encodes `records` into a fresh buffer; returns the padded batch bytes.
std::vector<std::byte> encode(const std::vector<Input>& records, uint16_t shard,
                              uint64_t first_seq) {
  size_t total = kBatchHeaderSize;
  for (const auto& r : records) total += record_size(r.key.size(), r.value.size());
  std::vector<std::byte> buf(align_batch(total));
  BatchBuilder b;
  b.start(buf.data(), buf.size(), shard, first_seq);
  uint64_t ts = 1000;
  for (const auto& r : records) {
    REQUIRE(b.fits(r.key.size(), r.value.size()));
    b.add(r.op, r.key, r.value, ts++);
  }
  REQUIRE(b.seal() == buf.size());
  return buf;
}

std::vector<Input> sample_records() {
  return {{Op::put, "alpha", "one"},
          {Op::put, "", ""},
          {Op::erase, "gone", ""},
          {Op::put, "k", std::string(300, 'x')},
          {Op::put, std::string(1000, 'q'), "v"}};
}

}  // namespace

TEST_CASE("a batch round-trips every field", "[batch]") {
  auto in = sample_records();
  auto buf = encode(in, 7, 41);
  REQUIRE(buf.size() % kBatchAlign == 0);
  BatchView v;
  REQUIRE(parse_batch(buf, v) == BatchError::ok);
  CHECK(v.header.shard == 7);
  CHECK(v.header.first_seq == 41);
  CHECK(v.header.record_count == in.size());
  CHECK(v.padded_size() == buf.size());
  RecordCursor c(v);
  Record r;
  size_t i = 0;
  while (c.next(r)) {
    REQUIRE(i < in.size());
    CHECK(r.op == in[i].op);
    CHECK(r.key == in[i].key);
    CHECK(r.value == in[i].value);
    CHECK(r.seq == 41 + i);
    CHECK(r.timestamp == 1000 + i);
    CHECK(r.shard == 7);
    ++i;
  }
  CHECK(i == in.size());
}

TEST_CASE("a gathered batch is byte for byte the contiguous one", "[batch]") {
  for (size_t value_len : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{65536}}) {
    INFO("value of " << value_len << " bytes");
    std::string value(value_len, 'x');
    for (size_t i = 0; i < value_len; ++i) value[i] = static_cast<char>('a' + i % 23);
    const std::string key = "the-key";
    std::vector<std::byte> whole(value_len + 256, std::byte{0x5a});
    BatchBuilder a;
    a.start(whole.data(), whole.size(), 2, 77);
    a.add(Op::put, key, value, 1234);
    const size_t padded = a.seal();

    std::vector<std::byte> head(256, std::byte{0x5a});
    BatchBuilder b;
    b.start(head.data(), head.size(), 2, 77);
    b.add_head(Op::put, key, static_cast<uint32_t>(value_len), 1234);
    CHECK(b.encoded() == kBatchHeaderSize + kRecordHeaderSize + key.size());
    CHECK(b.size() == a.size());
    const auto vbytes = std::as_bytes(std::span<const char>(value.data(), value.size()));
    CHECK(b.seal_gathered(vbytes) == padded);
    // Head, value and zero padding back to back: what the leader sends and logs.
    std::vector<std::byte> gathered(head.begin(), head.begin() + static_cast<long>(b.encoded()));
    gathered.insert(gathered.end(), vbytes.begin(), vbytes.end());
    gathered.resize(padded, std::byte{0});
    CHECK(std::memcmp(gathered.data(), whole.data(), padded) == 0);
    BatchView v;
    CHECK(parse_batch(gathered, v) == BatchError::ok);
  }
}

TEST_CASE("header fields are big-endian at their documented offsets", "[batch]") {
  auto buf = encode({{Op::put, "ab", "xyz"}}, 0x0102, 0x0a0b0c0d0e0f1011ull);
  const auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  CHECK(p[0] == 'R');
  CHECK(p[1] == 'P');
  CHECK(p[2] == 'L');
  CHECK(p[3] == 'B');
  CHECK(p[4] == kBatchVersion);
  CHECK(p[6] == 0x01);
  CHECK(p[7] == 0x02);
  CHECK(rdmarepl::load_be32(p + 8) == 1);
  CHECK(rdmarepl::load_be32(p + 12) == record_size(2, 3));
  CHECK(p[16] == 0x0a);
  CHECK(p[23] == 0x11);
  const uint8_t* rec = p + kBatchHeaderSize;
  CHECK(rec[0] == static_cast<uint8_t>(Op::put));
  CHECK(rdmarepl::load_be32(rec + 4) == 2);
  CHECK(rdmarepl::load_be32(rec + 8) == 3);
  CHECK(rdmarepl::load_be64(rec + 12) == 0x0a0b0c0d0e0f1011ull);
  CHECK(std::memcmp(rec + kRecordHeaderSize, "abxyz", 5) == 0);
}

TEST_CASE("every single flipped byte of a batch is rejected", "[batch]") {
  auto good = encode(sample_records(), 3, 1);
  BatchView v;
  const size_t unpadded = kBatchHeaderSize + [&] {
    REQUIRE(parse_batch(good, v) == BatchError::ok);
    return v.header.payload_len;
  }();
  for (size_t i = 0; i < unpadded; ++i) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto bad = good;
      bad[i] ^= std::byte{bit};
      INFO("byte " << i << " xor " << int{bit});
      CHECK(parse_batch(bad, v) != BatchError::ok);
    }
  }
}

TEST_CASE("a truncated batch is rejected at every length", "[batch]") {
  auto good = encode(sample_records(), 0, 1);
  BatchView v;
  REQUIRE(parse_batch(good, v) == BatchError::ok);
  for (size_t n = 0; n < v.size(); ++n) {
    INFO("length " << n);
    CHECK(parse_batch(std::span<const std::byte>(good.data(), n), v) == BatchError::truncated);
  }
}

TEST_CASE("specific corruptions report their cause", "[batch]") {
  auto good = encode(sample_records(), 0, 5);
  BatchView v;
  SECTION("bad magic") {
    auto bad = good;
    bad[0] = std::byte{'X'};
    CHECK(parse_batch(bad, v) == BatchError::bad_magic);
  }
  SECTION("bad version") {
    auto bad = good;
    bad[4] = std::byte{9};
    CHECK(parse_batch(bad, v) == BatchError::bad_version);
  }
  SECTION("payload_len larger than the buffer") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + 12, 1u << 30);
    CHECK(parse_batch(bad, v) == BatchError::truncated);
  }
  SECTION("zeroed buffer (a never-written ring)") {
    std::vector<std::byte> zero(256);
    CHECK(parse_batch(zero, v) == BatchError::bad_magic);
  }
}

TEST_CASE("a batch with a consistent CRC but inconsistent records is rejected", "[batch]") {
  // Forge batches with a correct checksum to reach the structural checks behind it.
  auto forge = [](std::vector<std::byte> buf) {
    BatchView v;
    const uint32_t payload_len = rdmarepl::load_be32(buf.data() + 12);
    uint32_t crc = rdmarepl::crc32c::extend(0, buf.data(), 24);
    crc = rdmarepl::crc32c::extend(crc, buf.data() + kBatchHeaderSize, payload_len);
    rdmarepl::store_be32(buf.data() + 24, rdmarepl::crc32c::mask(crc));
    return parse_batch(buf, v);
  };
  auto good = encode({{Op::put, "a", "b"}, {Op::erase, "c", ""}}, 0, 10);
  SECTION("record count too high") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + 8, 3);
    CHECK(forge(bad) == BatchError::bad_length);
  }
  SECTION("record count too low") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + 8, 1);
    CHECK(forge(bad) == BatchError::bad_length);
  }
  SECTION("seq gap") {
    auto bad = good;
    rdmarepl::store_be64(bad.data() + kBatchHeaderSize + record_size(1, 1) + 12, 99);
    CHECK(forge(bad) == BatchError::bad_seq);
  }
  SECTION("unknown op") {
    auto bad = good;
    bad[kBatchHeaderSize] = std::byte{7};
    CHECK(forge(bad) == BatchError::bad_record);
  }
  SECTION("key length overruns the payload") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + kBatchHeaderSize + 4, 5000);
    CHECK(forge(bad) == BatchError::bad_length);
  }
  SECTION("key longer than 64 KiB") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + kBatchHeaderSize + 4, kMaxKeyBytes + 1);
    CHECK(forge(bad) == BatchError::bad_record);
  }
  SECTION("erase with a value") {
    auto bad = good;
    bad[kBatchHeaderSize] = static_cast<std::byte>(Op::erase);
    CHECK(forge(bad) == BatchError::bad_record);
  }
  SECTION("value length overruns the payload") {
    auto bad = good;
    rdmarepl::store_be32(bad.data() + kBatchHeaderSize + 8, 0xffffff00u);
    CHECK(forge(bad) == BatchError::bad_length);
  }
  SECTION("non-zero reserved header field") {
    auto bad = good;
    bad[28] = std::byte{1};
    CHECK(forge(bad) == BatchError::bad_reserved);
  }
  SECTION("the untouched batch passes") {
    CHECK(forge(good) == BatchError::ok);
  }
}

TEST_CASE("random batches round-trip", "[batch]") {
  std::mt19937_64 rng(12345);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<Input> in;
    const int n = static_cast<int>(rng() % 20) + 1;
    for (int i = 0; i < n; ++i) {
      Input r;
      r.op = rng() % 4 == 0 ? Op::erase : Op::put;
      r.key.assign(rng() % 64, static_cast<char>('a' + rng() % 26));
      if (r.op == Op::put) r.value.assign(rng() % 2000, static_cast<char>(rng()));
      in.push_back(r);
    }
    auto buf = encode(in, static_cast<uint16_t>(iter), static_cast<uint64_t>(iter) * 1000 + 1);
    BatchView v;
    REQUIRE(parse_batch(buf, v) == BatchError::ok);
    RecordCursor c(v);
    Record r;
    for (const auto& e : in) {
      REQUIRE(c.next(r));
      REQUIRE(r.key == e.key);
      REQUIRE(r.value == e.value);
    }
    REQUIRE_FALSE(c.next(r));
  }
}

TEST_CASE("a damaged record inside a batch is found: one CRC covers every record", "[batch]") {
  // Three batches back to back, as a leader writes them into a follower's ring; the second
  // record of the middle batch is damaged. The follower parses each batch at its ring
  // offset and reports the one that fails ("bad batch at ring offset N: <reason>").
  std::vector<std::byte> ring;
  std::vector<size_t> offsets;
  for (uint64_t first : {1, 4, 7}) {
    offsets.push_back(ring.size());
    auto b = encode({{Op::put, "key-a", "value-one"},
                     {Op::put, "key-b", "value-two"},
                     {Op::erase, "key-c", ""}},
                    5, first);
    ring.insert(ring.end(), b.begin(), b.end());
  }
  const size_t rec = offsets[1] + kBatchHeaderSize + record_size(5, 9);  // the damaged record
  struct Damage {
    const char* what;
    size_t at;
    uint8_t mask;
  };
  const Damage damages[] = {{"a byte of the value", rec + kRecordHeaderSize + 5 + 3, 0x04},
                            {"the low byte of key_len", rec + 7, 0x01},
                            {"the high byte of key_len", rec + 4, 0x80}};
  for (const auto& d : damages) {
    INFO("damaged: " << d.what);
    auto bad = ring;
    bad[d.at] ^= std::byte{d.mask};
    std::vector<BatchError> found;
    for (size_t off : offsets) {
      BatchView v;
      found.push_back(parse_batch(std::span<const std::byte>(bad).subspan(off), v));
    }
    // Found in the batch that holds the record, and only there: the others still apply.
    CHECK(found ==
          std::vector<BatchError>{BatchError::ok, BatchError::bad_checksum, BatchError::ok});
    CHECK(describe(found[1]) == "batch CRC32C mismatch");
  }

  // A key_len damaged before the CRC was computed (a broken encoder) still fails the record
  // walk: the next record's header is read one byte early, and its op byte is the last
  // byte of "value-two".
  auto forged = std::vector<std::byte>(ring.begin() + static_cast<ptrdiff_t>(offsets[1]),
                                       ring.begin() + static_cast<ptrdiff_t>(offsets[2]));
  forged[rec - offsets[1] + 7] ^= std::byte{0x01};
  const uint32_t payload_len = rdmarepl::load_be32(forged.data() + 12);
  uint32_t crc = rdmarepl::crc32c::extend(0, forged.data(), 24);
  crc = rdmarepl::crc32c::extend(crc, forged.data() + kBatchHeaderSize, payload_len);
  rdmarepl::store_be32(forged.data() + 24, rdmarepl::crc32c::mask(crc));
  BatchView v;
  CHECK(parse_batch(forged, v) == BatchError::bad_record);
}

namespace {

// Encodes records with explicit flags (kRecGroupNext on every record of a group but its last).
std::vector<std::byte> encode_flagged(const std::vector<std::pair<Input, uint8_t>>& records,
                                      uint64_t first_seq) {
  size_t total = kBatchHeaderSize;
  for (const auto& [r, f] : records) total += record_size(r.key.size(), r.value.size());
  std::vector<std::byte> buf(align_batch(total));
  BatchBuilder b;
  b.start(buf.data(), buf.size(), 2, first_seq);
  for (const auto& [r, f] : records) b.add(r.op, r.key, r.value, 7, f);
  REQUIRE(b.seal() == buf.size());
  return buf;
}

struct CallLog {
  std::vector<std::string> calls;  // "a:<key>" per apply, "g:<keys>" per apply_group
  void apply(const Record& r) { calls.push_back("a:" + std::string(r.key)); }
};
struct GroupCallLog : CallLog {
  void apply_group(const RecordGroup& g) {
    std::string keys;
    uint64_t seq = g.first_seq();
    for (const Record& r : g) {
      CHECK(r.seq == seq++);
      CHECK(r.shard == 2);
      keys += std::string(r.key);
    }
    CHECK(seq == g.last_seq() + 1);
    CHECK(g.size() == keys.size());
    calls.push_back("g:" + keys);
  }
};

}  // namespace

TEST_CASE("write groups: flagged records parse, a batch never ends inside a group", "[batch]") {
  const Input p{Op::put, "x", "1"};
  auto with = [](std::string k) { return Input{Op::put, std::move(k), "v"}; };
  // single a, group (b c d), single e, group (f g)
  auto buf = encode_flagged({{with("a"), 0},
                             {with("b"), kRecGroupNext},
                             {with("c"), kRecGroupNext},
                             {with("d"), 0},
                             {with("e"), 0},
                             {with("f"), kRecGroupNext},
                             {with("g"), 0}},
                            10);
  BatchView v;
  REQUIRE(parse_batch(buf, v) == BatchError::ok);

  SECTION("a store with apply_group gets each group in one call") {
    GroupCallLog log;
    uint64_t skipped = 0;
    CHECK(detail::apply_records(log, v, 9, skipped) == 16);
    CHECK(log.calls == std::vector<std::string>{"a:a", "g:bcd", "a:e", "g:fg"});
    CHECK(skipped == 0);
  }
  SECTION("a store without it gets the records one by one, in order") {
    CallLog log;
    uint64_t skipped = 0;
    CHECK(detail::apply_records(log, v, 9, skipped) == 16);
    CHECK(log.calls == std::vector<std::string>{"a:a", "a:b", "a:c", "a:d", "a:e", "a:f", "a:g"});
  }
  SECTION("records at or below `after` are skipped; a group's rest stays one call") {
    GroupCallLog log;
    uint64_t skipped = 0;
    CHECK(detail::apply_records(log, v, 11, skipped) == 16);  // a, b applied before
    CHECK(log.calls == std::vector<std::string>{"g:cd", "a:e", "g:fg"});
    CHECK(skipped == 2);
  }
  SECTION("a batch whose last record says another follows is refused") {
    auto cut = encode_flagged({{p, 0}, {p, kRecGroupNext}}, 1);
    CHECK(parse_batch(cut, v) == BatchError::bad_group);
    CHECK_FALSE(describe(BatchError::bad_group).empty());
  }
  SECTION("an unknown record flag is refused") {
    auto bad = encode_flagged({{p, 0x02}}, 1);
    CHECK(parse_batch(bad, v) == BatchError::bad_record);
  }
}
