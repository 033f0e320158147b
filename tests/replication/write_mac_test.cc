// The tags that authenticate replication writes (src/replication/write_mac.h): a tag is
// accepted only for the same key, immediate, bytes and place in the connection's order.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <vector>

#include "write_mac.h"

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
  WriteMac tx(key_of(1));
  WriteMac rx(key_of(1));
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
    WriteMac tx(key_of(1)), rx(key_of(1));
    const Tag t = seal(tx, 1, a);
    auto forged = a;
    forged[100] ^= std::byte{0x01};
    CHECK_FALSE(rx.open(1, forged, t));
  }
  SECTION("a byte cut off the end") {
    WriteMac tx(key_of(1)), rx(key_of(1));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(1, std::span(a).first(a.size() - 8), t));
  }
  SECTION("another immediate (shard, kind or ring place)") {
    WriteMac tx(key_of(1)), rx(key_of(1));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(2, a, t));
  }
  SECTION("another key (another connection)") {
    WriteMac tx(key_of(1)), rx(key_of(2));
    const Tag t = seal(tx, 1, a);
    CHECK_FALSE(rx.open(1, a, t));
  }
  SECTION("the same message twice") {
    WriteMac tx(key_of(1)), rx(key_of(1));
    const Tag t = seal(tx, 1, a);
    CHECK(rx.open(1, a, t));
    CHECK_FALSE(rx.open(1, a, t));
  }
  SECTION("two messages swapped, or one dropped") {
    WriteMac tx(key_of(1)), rx(key_of(1));
    const Tag ta = seal(tx, 1, a);
    const Tag tb = seal(tx, 1, b);
    (void)ta;
    CHECK_FALSE(rx.open(1, b, tb));  // b where a was due
  }
  SECTION("a retracted tag is issued again") {
    WriteMac tx(key_of(1)), rx(key_of(1));
    (void)seal(tx, 1, a);
    tx.retract();  // not sent after all
    const Tag t = seal(tx, 1, b);
    CHECK(rx.open(1, b, t));
  }
}

TEST_CASE("write tags: gathered segments authenticate as their concatenation",
          "[replication][mac]") {
  WriteMac tx(key_of(3)), rx(key_of(3));
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
