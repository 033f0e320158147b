// Checkpoint shipping formats and the catch-up rate limit: the chunk header round trip and
// its checks, the token bucket's arithmetic (fed explicit clock values; no timing), and the
// exact reads of checkpoint payload that fill each chunk.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

#include "checkpoint_ship.h"
#include "durability.h"
#include "rdmarepl/wal/checkpoint.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl::replication::detail;

namespace {

std::array<std::byte, kChunkHeaderSize> encoded(const ChunkHeader& h) {
  std::array<std::byte, kChunkHeaderSize> b{};
  encode_chunk_header(h, b);
  return b;
}

}  // namespace

TEST_CASE("a checkpoint chunk header round-trips and its checks reject damage", "[unit]") {
  ChunkHeader h;
  h.id = 0x0102030405060708u;
  h.total = 1000;
  h.offset = 600;
  h.length = 400;
  h.crc = 0xdeadbeef;
  h.flags = kChunkLast;
  auto b = encoded(h);
  // Big-endian fields at their documented offsets.
  CHECK(b[0] == std::byte{0x52});
  CHECK(b[3] == std::byte{0x43});
  CHECK(b[8] == std::byte{0x01});
  CHECK(b[15] == std::byte{0x08});
  CHECK(b[31] == std::byte{0x58});  // offset 600 = 0x258
  ChunkHeader out;
  std::string why;
  REQUIRE(decode_chunk_header(b, out, why));
  CHECK(out.id == h.id);
  CHECK(out.total == h.total);
  CHECK(out.offset == h.offset);
  CHECK(out.length == h.length);
  CHECK(out.crc == h.crc);
  CHECK(out.last());

  SECTION("any flipped bit fails the header CRC or the magic") {
    for (size_t i = 0; i < 44; ++i) {
      auto d = b;
      d[i] ^= std::byte{0x10};
      CHECK_FALSE(decode_chunk_header(d, out, why));
    }
  }
  SECTION("the last flag must match offset + length == total") {
    h.flags = 0;
    CHECK_FALSE(decode_chunk_header(encoded(h), out, why));
    CHECK(why.find("inconsistent") != std::string::npos);
    h.offset = 0;
    CHECK(decode_chunk_header(encoded(h), out, why));
    CHECK_FALSE(out.last());
  }
  SECTION("a chunk may not run past the total") {
    h.offset = 700;
    CHECK_FALSE(decode_chunk_header(encoded(h), out, why));
  }
  SECTION("a short buffer is refused") {
    CHECK_FALSE(decode_chunk_header(std::span<const std::byte>(b.data(), 20), out, why));
    CHECK(why.find("shorter") != std::string::npos);
  }
}

TEST_CASE("the catch-up token bucket charges bytes and says how long to wait", "[unit]") {
  constexpr uint64_t kSec = 1'000'000'000;
  SECTION("unlimited never waits") {
    TokenBucket b;
    CHECK(b.take(uint64_t{1} << 40, 0) == 0);
  }
  SECTION("the burst is free, then the rate applies") {
    TokenBucket b(1000, 100, 5 * kSec);  // 1000 B/s, 100 B saved up
    CHECK(b.take(100, 5 * kSec) == 0);
    CHECK(b.balance() == 0);
    // 50 more bytes at the same instant: a debt of 50 B = 50 ms at 1000 B/s.
    CHECK(b.take(50, 5 * kSec) == 50'000'000);
    CHECK(b.balance() == -50);
    // 30 ms later 30 B came in: 20 B of debt remain, then 10 more are charged.
    CHECK(b.take(10, 5 * kSec + 30'000'000) == 30'000'000);
    CHECK(b.balance() == -30);
  }
  SECTION("idle time refills only up to the burst") {
    TokenBucket b(1000, 100, 0);
    CHECK(b.take(100, 0) == 0);
    CHECK(b.take(0, 100 * kSec) == 0);
    CHECK(b.balance() == 100);
    CHECK(b.take(150, 100 * kSec) == 50'000'000);
  }
  SECTION("fractions of a byte are not lost between calls") {
    TokenBucket b(3, 1000, 0);  // 3 B/s: one byte every 333.3 ms
    CHECK(b.take(1000, 0) == 0);
    for (uint64_t t = 1; t <= 9; ++t) (void)b.take(0, t * kSec / 9);  // 9 refills in 1 s
    CHECK(b.balance() == 3);
  }
  SECTION("a waiting time is rounded up, never down") {
    TokenBucket b(3, 1, 0);
    CHECK(b.take(2, 0) == 333'333'334);  // 1 B of debt at 3 B/s
  }
  SECTION("a long run keeps the rate: 10 MB at 1 MB/s is 10 s of waits") {
    TokenBucket b(1'000'000, 100'000, 0);
    uint64_t now = 0;
    for (int i = 0; i < 100; ++i) now += b.take(100'000, now);
    // The first 100 kB were the burst; the other 9.9 MB take 9.9 s.
    CHECK(now == 9'900'000'000);
  }
  SECTION("large rates and long gaps do not overflow") {
    TokenBucket b(uint64_t{1} << 40, uint64_t{1} << 37, 0);
    CHECK(b.take(uint64_t{1} << 37, 0) == 0);
    CHECK(b.take(uint64_t{1} << 40, 0) == kSec);
    CHECK(b.take(0, uint64_t{1} << 62) == 0);
    CHECK(b.balance() == int64_t{1} << 37);
  }
}

TEST_CASE("read_exact fills its span from a checkpoint's payload and names one that is short",
          "[unit]") {
  rdmarepl::wal::test::TempDir dir;
  const std::string payload = "0123456789abcdef";
  std::string path;
  {
    auto w = rdmarepl::wal::CheckpointWriter::create(dir.path(), 7);
    REQUIRE(w.ok());
    REQUIRE(w->append({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}).ok());
    REQUIRE(w->commit().ok());
    path = w->path();
  }
  auto in = rdmarepl::wal::CheckpointReader::open(path);
  REQUIRE(in.ok());
  std::array<uint8_t, 10> head{};
  REQUIRE(read_exact(*in, head, "ended early").ok());
  CHECK(std::string(head.begin(), head.end()) == payload.substr(0, 10));
  // Six bytes are left: asking for ten is an error that names the file.
  std::array<uint8_t, 10> rest{};
  auto st = read_exact(*in, rest, "ended early");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(rdmarepl::Errc::corrupt));
  CHECK(st.error().message() == "checkpoint " + path + " ended early");

  REQUIRE(in->rewind().ok());
  std::array<uint8_t, 16> all{};
  REQUIRE(read_exact(*in, all, "ended early").ok());
  CHECK(std::string(all.begin(), all.end()) == payload);
  REQUIRE(read_exact(*in, std::span<uint8_t>(), "ended early").ok());  // nothing to read
}
