#include "rdmarepl/core/byte_order.h"

#include <catch2/catch.hpp>

#include <array>

using namespace rdmarepl;

TEST_CASE("integers are stored big-endian", "[core][byte_order]") {
  std::array<uint8_t, 8> b{};
  store_be16(b.data(), 0x1234);
  CHECK(b[0] == 0x12);
  CHECK(b[1] == 0x34);
  store_be32(b.data(), 0xdeadbeef);
  CHECK(b[0] == 0xde);
  CHECK(b[3] == 0xef);
  CHECK(load_be32(b.data()) == 0xdeadbeefu);
  store_be64(b.data(), 0x0102030405060708ull);
  for (int i = 0; i < 8; ++i) CHECK(b[i] == i + 1);
  CHECK(load_be64(b.data()) == 0x0102030405060708ull);
  CHECK(load_be16(b.data()) == 0x0102);
}

TEST_CASE("unaligned loads and stores round-trip", "[core][byte_order]") {
  std::array<uint8_t, 16> b{};
  for (size_t off = 0; off < 8; ++off) {
    store_be64(b.data() + off, 0xa1b2c3d4e5f60718ull + off);
    CHECK(load_be64(b.data() + off) == 0xa1b2c3d4e5f60718ull + off);
    store_be32(b.data() + off, 0x01020304u + static_cast<uint32_t>(off));
    CHECK(load_be32(b.data() + off) == 0x01020304u + off);
  }
}

TEST_CASE("host/network conversions are involutions", "[core][byte_order]") {
  static_assert(net_to_host32(host_to_net32(0x11223344u)) == 0x11223344u);
  CHECK(host_to_net16(net_to_host16(0xabcd)) == 0xabcd);
  CHECK(host_to_net64(net_to_host64(42)) == 42);
  uint32_t v = host_to_net32(1);
  CHECK(reinterpret_cast<uint8_t*>(&v)[3] == 1);
}
