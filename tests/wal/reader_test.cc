// One small test per boundary case of the frame reader, on segments built byte by byte.
#include "rdmarepl/wal/reader.h"

#include <catch2/catch.hpp>

#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {
using Step = SegmentReader::Step;

// Reads an in-memory segment to its end; returns the payloads and the final step.
std::vector<std::string> parse(const std::vector<uint8_t>& seg, Step* last,
                               SegmentReader* out_reader = nullptr, uint64_t number = 1) {
  SegmentReader r(seg, number);
  std::vector<std::string> payloads;
  Frame f;
  Step s;
  while ((s = r.next(&f)) == Step::frame)
    payloads.emplace_back(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
  *last = s;
  if (out_reader != nullptr) *out_reader = r;
  return payloads;
}
}  // namespace

TEST_CASE("reader: empty directory has no frames and no damage", "[wal][reader]") {
  TempDir dir;
  CollectingReporter rep;
  ReadEnd end;
  CHECK(read_all(dir.path(), &rep, &end).empty());
  CHECK_FALSE(end.any_segment);
  CHECK(rep.damages.empty());
}

TEST_CASE("reader: a segment with only its header is an empty log", "[wal][reader]") {
  SegmentBuilder b(1);
  Step s;
  CHECK(parse(b.bytes(), &s).empty());
  CHECK(s == Step::end_of_data);
  b.pad_zeros(4096);  // preallocated, never written
  CHECK(parse(b.bytes(), &s).empty());
  CHECK(s == Step::end_of_data);
}

TEST_CASE("reader: frames come back with the exact bytes appended", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("first", 1, 1);
  b.add("", 2, 2);  // an empty batch is a valid frame
  b.add(std::string(1000, 'z'), 3, 9);
  b.pad_zeros(100);
  Step s;
  auto p = parse(b.bytes(), &s);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == "first");
  CHECK(p[1].empty());
  CHECK(p[2] == std::string(1000, 'z'));
  CHECK(s == Step::end_of_data);
}

TEST_CASE("reader: the end frame closes a segment", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("x", 1, 1);
  const uint64_t end_at = b.seal();
  SegmentReader r(b.bytes(), 1);
  Frame f;
  CHECK(r.next(&f) == Step::frame);
  CHECK(r.next(&f) == Step::end_frame);
  CHECK(r.valid_end() == end_at + kFrameHeaderSize);
  CHECK(r.next(&f) == Step::end_frame);  // sticky
}

TEST_CASE("reader: torn frame header at the end of the file", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("keep", 1, 1);
  const uint64_t torn = b.add("lost", 2, 2);
  for (uint64_t cut = torn + 1; cut < torn + kFrameHeaderSize; ++cut) {
    auto seg = b.bytes();
    seg.resize(cut);
    SegmentReader r(seg, 1);
    Step s;
    auto p = parse(seg, &s, &r);
    CHECK(p.size() == 1);
    CHECK(s == Step::damaged);
    CHECK(r.damage_reason() == DamageReason::torn_header);
    CHECK(r.valid_end() == torn);
  }
}

TEST_CASE("reader: torn payload (length past end of file)", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("keep", 1, 1);
  const uint64_t torn = b.add(std::string(200, 'q'), 2, 2);
  auto seg = b.bytes();
  seg.resize(torn + kFrameHeaderSize + 100);
  SegmentReader r(seg, 1);
  Step s;
  CHECK(parse(seg, &s, &r).size() == 1);
  CHECK(s == Step::damaged);
  CHECK(r.damage_reason() == DamageReason::bad_length);
  CHECK(r.valid_end() == torn);
  CHECK(r.damaged_bytes() == kFrameHeaderSize + 100);
}

TEST_CASE("reader: bad CRC with a valid length", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("keep", 1, 1);
  const uint64_t bad = b.add("payload", 2, 2);
  b.add("after", 3, 3);
  b.bytes()[bad + kFrameHeaderSize + 3] ^= 0x20;
  SegmentReader r(b.bytes(), 1);
  Step s;
  CHECK(parse(b.bytes(), &s, &r) == std::vector<std::string>{"keep"});
  CHECK(r.damage_reason() == DamageReason::bad_checksum);
  CHECK(r.valid_end() == bad);
}

TEST_CASE("reader: a length above the frame limit is rejected before any read", "[wal][reader]") {
  SegmentBuilder b(1);
  const uint64_t at = b.add("x", 1, 1);
  store_be32(b.bytes().data() + at + 4, kMaxFramePayload + 1);
  SegmentReader r(b.bytes(), 1);
  Step s;
  CHECK(parse(b.bytes(), &s, &r).empty());
  CHECK(r.damage_reason() == DamageReason::bad_length);
}

TEST_CASE("reader: the maximum frame payload is accepted", "[wal][reader]") {
  SegmentBuilder b(1);
  std::vector<uint8_t> big(kMaxFramePayload, 0x5a);
  b.add(big, 1, 1);
  SegmentReader r(b.bytes(), 1);
  Frame f;
  REQUIRE(r.next(&f) == Step::frame);
  CHECK(f.payload.size() == kMaxFramePayload);
  CHECK(r.next(&f) == Step::end_of_data);
}

TEST_CASE("reader: checksummed frames with a bad type or seq range", "[wal][reader]") {
  SegmentBuilder b(1);
  const uint64_t at = b.add("x", 1, 1);
  SECTION("unknown type") {
    b.bytes()[at + 8] = 7;
    fix_frame_checksum(b.bytes(), at);
    SegmentReader r(b.bytes(), 1);
    Step s;
    parse(b.bytes(), &s, &r);
    CHECK(r.damage_reason() == DamageReason::bad_type);
  }
  SECTION("end frame with a payload") {
    b.bytes()[at + 8] = static_cast<uint8_t>(FrameType::end);
    fix_frame_checksum(b.bytes(), at);
    SegmentReader r(b.bytes(), 1);
    Step s;
    parse(b.bytes(), &s, &r);
    CHECK(r.damage_reason() == DamageReason::bad_type);
  }
  SECTION("first_seq above last_seq") {
    store_be64(b.bytes().data() + at + 16, 5);
    fix_frame_checksum(b.bytes(), at);
    SegmentReader r(b.bytes(), 1);
    Step s;
    parse(b.bytes(), &s, &r);
    CHECK(r.damage_reason() == DamageReason::bad_seq);
  }
}

TEST_CASE("reader: bad segment headers", "[wal][reader]") {
  SegmentBuilder b(3);
  b.add("x", 1, 1);
  Step s;
  SECTION("wrong segment number") {
    SegmentReader r(b.bytes(), 4);
    parse(b.bytes(), &s, &r, 4);
    CHECK(r.damage_reason() == DamageReason::bad_segment_header);
    CHECK(r.valid_end() == 0);
  }
  SECTION("flipped magic, version or CRC byte") {
    for (size_t i = 0; i < kSegmentHeaderSize; ++i) {
      auto seg = b.bytes();
      seg[i] ^= 0x10;
      SegmentReader r(seg, 3);
      CHECK(parse(seg, &s, &r, 3).empty());
      CHECK(r.damage_reason() == DamageReason::bad_segment_header);
    }
  }
  SECTION("shorter than a header") {
    auto seg = b.bytes();
    seg.resize(kSegmentHeaderSize - 1);
    SegmentReader r(seg, 3);
    parse(seg, &s, &r, 3);
    CHECK(r.damage_reason() == DamageReason::bad_segment_header);
  }
}

TEST_CASE("reader: non-zero bytes inside the preallocated tail", "[wal][reader]") {
  SegmentBuilder b(1);
  b.add("keep", 1, 1);
  const uint64_t end = b.bytes().size();
  b.pad_zeros(500);
  b.bytes()[end + 300] = 0xee;
  SegmentReader r(b.bytes(), 1);
  Step s;
  CHECK(parse(b.bytes(), &s, &r).size() == 1);
  CHECK(r.damage_reason() == DamageReason::garbage_after_end);
  CHECK(r.valid_end() == end);
  CHECK(r.damaged_bytes() == 301);
}

// ---------------------------------------------------------------- across segment files

TEST_CASE("reader: frames continue across sealed segments", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s2(2), s3(3);
  s1.add("a", 1, 1);
  s1.seal();
  s2.seal();  // an empty sealed segment is fine
  s3.add("b", 2, 3);
  s3.pad_zeros(64);
  s1.write_to(dir.segment(1));
  s2.write_to(dir.segment(2));
  s3.write_to(dir.segment(3));
  CollectingReporter rep;
  ReadEnd end;
  auto frames = read_all(dir.path(), &rep, &end);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].payload == bytes_of("a"));
  CHECK(frames[1].payload == bytes_of("b"));
  CHECK(frames[1].segment == 3);
  CHECK(rep.damages.empty());
  CHECK(end.end_segment == 3);
  CHECK_FALSE(end.sealed);
  CHECK(end.max_seq == 3);
}

TEST_CASE("reader: damage in the last segment is a torn tail", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s2(2);
  s1.add("a", 1, 1);
  s1.seal();
  s2.add("b", 2, 2);
  const uint64_t torn = s2.add("c", 3, 3);
  s1.write_to(dir.segment(1));
  s2.write_to(dir.segment(2));
  shrink_file(dir.segment(2), torn + 5);
  CollectingReporter rep;
  ReadEnd end;
  auto frames = read_all(dir.path(), &rep, &end);
  CHECK(frames.size() == 2);
  REQUIRE(rep.damages.size() == 1);
  CHECK(rep.damages[0].at_tail);
  CHECK(rep.damages[0].segment == 2);
  CHECK(rep.damages[0].offset == torn);
  CHECK(rep.damages[0].bytes_dropped > 0);  // up to the last non-zero byte of the 5
  CHECK(rep.damages[0].bytes_dropped <= 5);
  CHECK(rep.damages[0].reason == DamageReason::torn_header);
  CHECK_FALSE(end.damaged_mid_log);
}

TEST_CASE("reader: damage in an earlier segment stops at the valid prefix", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s2(2);
  s1.add("a", 1, 1);
  const uint64_t bad = s1.add("b", 2, 2);
  s1.seal();
  s2.add("c", 3, 3);
  s1.write_to(dir.segment(1));
  s2.write_to(dir.segment(2));
  flip_byte(dir.segment(1), bad + kFrameHeaderSize);
  CollectingReporter rep;
  ReadEnd end;
  auto frames = read_all(dir.path(), &rep, &end);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].payload == bytes_of("a"));
  REQUIRE(rep.damages.size() == 2);
  CHECK(rep.damages[0].reason == DamageReason::bad_checksum);
  CHECK(rep.damages[0].offset == bad);
  CHECK_FALSE(rep.damages[0].at_tail);
  CHECK(rep.damages[1].reason == DamageReason::after_damage);
  CHECK(rep.damages[1].segment == 2);
  CHECK(rep.damages[1].bytes_dropped == file_size(dir.segment(2)));
  CHECK(end.damaged_mid_log);
}

TEST_CASE("reader: an earlier segment without its end frame", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s2(2);
  s1.add("a", 1, 1);
  s2.add("b", 2, 2);
  s1.write_to(dir.segment(1));
  s2.write_to(dir.segment(2));
  CollectingReporter rep;
  ReadEnd end;
  CHECK(read_all(dir.path(), &rep, &end).size() == 1);
  REQUIRE_FALSE(rep.damages.empty());
  CHECK(rep.damages[0].reason == DamageReason::missing_end);
  CHECK(end.damaged_mid_log);
}

TEST_CASE("reader: a missing segment number stops the log", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s3(3);
  s1.add("a", 1, 1);
  s1.seal();
  s3.add("c", 3, 3);
  s1.write_to(dir.segment(1));
  s3.write_to(dir.segment(3));
  CollectingReporter rep;
  ReadEnd end;
  CHECK(read_all(dir.path(), &rep, &end).size() == 1);
  REQUIRE(rep.damages.size() == 2);
  CHECK(rep.damages[0].reason == DamageReason::missing_segment);
  CHECK(rep.damages[0].segment == 2);
  CHECK(rep.damages[1].reason == DamageReason::after_damage);
  CHECK(end.damaged_mid_log);
}

TEST_CASE("reader: a bad header in the last segment is a torn tail", "[wal][reader]") {
  TempDir dir;
  SegmentBuilder s1(1), s2(2);
  s1.add("a", 1, 1);
  s1.seal();
  s1.write_to(dir.segment(1));
  s2.write_to(dir.segment(2));
  shrink_file(dir.segment(2), 10);
  CollectingReporter rep;
  ReadEnd end;
  CHECK(read_all(dir.path(), &rep, &end).size() == 1);
  REQUIRE(rep.damages.size() == 1);
  CHECK(rep.damages[0].reason == DamageReason::bad_segment_header);
  CHECK(rep.damages[0].at_tail);
  CHECK_FALSE(end.end_header_valid);
}
