#include "rdmarepl/core/crc32c.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <random>
#include <vector>

namespace rdmarepl::crc32c::detail {
uint32_t extend_portable_for_test(uint32_t crc, const void* data, size_t n) noexcept;
}

using namespace rdmarepl;

namespace {
uint32_t both(const void* p, size_t n) {
  uint32_t hw = crc32c::value(p, n);
  uint32_t sw = crc32c::detail::extend_portable_for_test(0, p, n);
  CHECK(hw == sw);
  return hw;
}
}  // namespace

// RFC 3720, appendix B.4 (CRC examples).
TEST_CASE("CRC32C matches the RFC 3720 test vectors", "[core][crc32c]") {
  std::array<uint8_t, 32> buf{};
  CHECK(both(buf.data(), buf.size()) == 0x8a9136aau);

  buf.fill(0xff);
  CHECK(both(buf.data(), buf.size()) == 0x62a8ab43u);

  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  CHECK(both(buf.data(), buf.size()) == 0x46dd794eu);

  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  CHECK(both(buf.data(), buf.size()) == 0x113fdb5cu);

  const uint8_t iscsi_read[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                  0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  CHECK(both(iscsi_read, sizeof iscsi_read) == 0xd9963a56u);
}

TEST_CASE("CRC32C of the standard check string", "[core][crc32c]") {
  CHECK(both("123456789", 9) == 0xe3069283u);
  CHECK(both("", 0) == 0u);
}

TEST_CASE("extend over pieces equals the CRC of the whole at any split and alignment",
          "[core][crc32c]") {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(4099);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t off = 0; off < 9; ++off) {
    const uint8_t* p = data.data() + off;
    size_t n = data.size() - off;
    uint32_t whole = both(p, n);
    for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{63}, n / 2, n}) {
      uint32_t c = crc32c::extend(0, p, split);
      c = crc32c::extend(c, p + split, n - split);
      CHECK(c == whole);
    }
  }
}

TEST_CASE("mask and unmask are inverse and change the value", "[core][crc32c]") {
  uint32_t crc = crc32c::value("foo", 3);
  CHECK(crc32c::mask(crc) != crc);
  CHECK(crc32c::mask(crc32c::mask(crc)) != crc);
  CHECK(crc32c::unmask(crc32c::mask(crc)) == crc);
  CHECK(crc32c::unmask(crc32c::unmask(crc32c::mask(crc32c::mask(crc)))) == crc);
}

// The hardware path splits long inputs into three streams and joins them; every length
// around the split sizes (3 x 256 and 3 x 8192 bytes) and random ones must agree with the
// portable one, from any alignment and starting CRC.
TEST_CASE("the three-stream hardware path agrees with the portable one at every length",
          "[core][crc32c]") {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> data(3 * 8192 * 3 + 64);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t base : {size_t{768}, size_t{1536}, size_t{24576}, size_t{49152}, size_t{73728}})
    for (size_t d = 0; d < 20; ++d) {
      lengths.push_back(base + d);
      lengths.push_back(base - d);
    }
  for (int i = 0; i < 200; ++i) lengths.push_back(rng() % (data.size() - 16));
  for (size_t n : lengths) {
    const size_t off = rng() % 9;
    const auto seed = static_cast<uint32_t>(rng());
    const uint32_t hw = crc32c::extend(seed, data.data() + off, n);
    const uint32_t sw = crc32c::detail::extend_portable_for_test(seed, data.data() + off, n);
    INFO("length " << n << " offset " << off);
    REQUIRE(hw == sw);
  }
}
