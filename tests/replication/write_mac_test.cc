// The tags that authenticate replication writes (src/replication/write_mac.h): a tag is
// accepted only for the same keys, immediate, bytes and place in the connection's order;
// a digest computed once serves every connection.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <vector>

#include "write_mac.h"

using rdmarepl::replication::detail::Digest;
using rdmarepl::replication::detail::kMacTagBytes;
using rdmarepl::replication::detail::WriteMac;
using rdmarepl::transport::LocalSegment;
using rdmarepl::transport::SessionKey;
using Tag = std::array<uint8_t, kMacTagBytes>;

namespace {

SessionKey key_of(uint8_t seed) {
  SessionKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed + i * 7);
  return k;
}

Tag seal(WriteMac& m, uint32_t imm, const std::vector<std::byte>& bytes) {
  Tag t{};
  const LocalSegment s{bytes.data(), static_cast<uint32_t>(bytes.size()), 0};
  m.seal(imm, std::span(&s, 1), t);
  return t;
}

std::vector<std::byte> message(size_t n, uint8_t fill) {
  return std::vector<std::byte>(n, std::byte{fill});
}

}  // namespace

TEST_CASE("write tags: the right message in the right order passes", "[replication][mac]") {
  WriteMac tx(key_of(1), key_of(100));
  WriteMac rx(key_of(1), key_of(100));
  const auto a = message(1000, 0xaa);
  const auto b = message(24, 0xbb);
  const Tag ta = seal(tx, 7, a);
  const Tag tb = seal(tx, 8, b);
  CHECK(rx.open(7, a, ta));
  CHECK(rx.open(8, b, tb));
  CHECK(rx.counter() == 2);
  CHECK_FALSE(WriteMac().enabled());
  CHECK(tx.enabled());
}

TEST_CASE("write tags: altered bytes, immediate, key, replay and reordering fail",
          "[replication][mac]") {
  const auto a = message(256, 0x11);
  const auto b = message(256, 0x22);
  SECTION("one bit of the bytes") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    const Tag t = seal(tx, 1, a);
    auto forged = a;
    forged[100] ^= std::byte{0x01};
    CHECK_FALSE(rx.open(1, forged, t));
  }
  SECTION("a byte cut off the end") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(1, std::span(a).first(a.size() - 8), t));
  }
  SECTION("another immediate (shard, kind or ring place)") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(2, a, t));
  }
  SECTION("another key (another connection)") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(2), key_of(100));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(1, a, t));
  }
  SECTION("the same message twice") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    const Tag t = seal(tx, 1, a);
    CHECK(rx.open(1, a, t));
    CHECK_FALSE(rx.open(1, a, t));
  }
  SECTION("two messages swapped, or one dropped") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    const Tag ta = seal(tx, 1, a);
    const Tag tb = seal(tx, 1, b);
    (void)ta;
    CHECK_FALSE(rx.open(1, b, tb));  // b where a was due
  }
  SECTION("a retracted tag is issued again") {
    WriteMac tx(key_of(1), key_of(100)), rx(key_of(1), key_of(100));
    (void)seal(tx, 1, a);
    tx.retract();  // not sent after all
    const Tag t = seal(tx, 1, b);
    CHECK(rx.open(1, b, t));
  }
}

TEST_CASE("write tags: gathered segments authenticate as their concatenation",
          "[replication][mac]") {
  WriteMac tx(key_of(3), key_of(100)), rx(key_of(3), key_of(100));
  const auto whole = message(300, 0x5c);
  std::vector<std::byte> copy = whole;
  copy[10] = std::byte{1};
  copy[200] = std::byte{2};
  const std::array<LocalSegment, 3> parts{LocalSegment{copy.data(), 100, 0},
                                          LocalSegment{copy.data() + 100, 150, 0},
                                          LocalSegment{copy.data() + 250, 50, 0}};
  Tag t{};
  tx.seal(9, parts, t);
  CHECK(rx.open(9, copy, t));
}

TEST_CASE("write tags: one digest serves every connection, bound to its bytes",
          "[replication][mac]") {
  const auto a = message(4096, 0x3c);
  const auto b = message(4096, 0x3d);
  const LocalSegment sa{a.data(), static_cast<uint32_t>(a.size()), 0};
  WriteMac one(key_of(1), key_of(100)), two(key_of(2), key_of(100));
  Digest d{};
  one.digest(std::span(&sa, 1), d);
  Digest again{};
  two.digest(std::span(&sa, 1), again);
  CHECK(d == again);  // the digest key is the same on both connections
  Tag t1{}, t2{};
  one.seal_digest(5, d, t1);
  two.seal_digest(5, d, t2);
  CHECK(t1 != t2);  // but each connection's tag is its own
  WriteMac rx1(key_of(1), key_of(100)), rx2(key_of(2), key_of(100));
  CHECK(rx1.open(5, a, t1));
  CHECK(rx2.open(5, a, t2));
  SECTION("the tag of one connection fails on the other") {
    WriteMac rx(key_of(2), key_of(100));
    CHECK_FALSE(rx.open(5, a, t1));
  }
  SECTION("a sealed digest does not pass for other bytes") {
    WriteMac rx(key_of(1), key_of(100));
    CHECK_FALSE(rx.open(5, b, t1));
  }
  SECTION("another digest key (another pre-shared key) fails") {
    WriteMac rx(key_of(1), key_of(101));
    CHECK_FALSE(rx.open(5, a, t1));
  }
  SECTION("sealing a digest equals sealing the bytes") {
    WriteMac tx(key_of(1), key_of(100));
    Tag t{};
    tx.seal(5, std::span(&sa, 1), t);
    CHECK(t == t1);
  }
}
