#include "rdmarepl/memory/external_region.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <catch2/catch.hpp>

#include "rdmarepl/memory/arena.h"

using namespace rdmarepl;
using namespace rdmarepl::memory;

namespace {

struct Mapping {
  explicit Mapping(size_t n) : size(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
  char* base;
  size_t size;
};

std::string hex(const void* p) {
  return fmt::format("{:#x}", reinterpret_cast<uintptr_t>(p));
}

}  // namespace

TEST_CASE("a mapped, aligned region within the size limit passes", "[unit][memory]") {
  Mapping m(16 * kPageSize);
  REQUIRE(m.base != nullptr);
  CHECK(check_external_region(m.base, m.size, size_t{1} << 30).ok());
  CHECK(check_external_region(m.base + kPageSize, kPageSize, kPageSize).ok());
}

TEST_CASE("a misaligned address names the address and the alignment", "[unit][memory]") {
  Mapping m(4 * kPageSize);
  REQUIRE(m.base != nullptr);
  auto st = check_external_region(m.base + 100, kPageSize, size_t{1} << 30);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::misaligned));
  CHECK(st.error().message().find(hex(m.base + 100)) != std::string::npos);
  CHECK(st.error().message().find("4096") != std::string::npos);

  auto len = check_external_region(m.base, kPageSize + 1, size_t{1} << 30);
  REQUIRE_FALSE(len.ok());
  CHECK(len.error().is(Errc::misaligned));
  CHECK(len.error().message().find("4097") != std::string::npos);
}

TEST_CASE("an unmapped range is reported with the range and the first hole", "[unit][memory]") {
  Mapping m(8 * kPageSize);
  REQUIRE(m.base != nullptr);
  char* hole = m.base + 5 * kPageSize;
  REQUIRE(munmap(hole, kPageSize) == 0);
  auto st = check_external_region(m.base, m.size, size_t{1} << 30);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::not_mapped));
  CHECK(st.error().message().find(hex(m.base)) != std::string::npos);
  CHECK(st.error().message().find(hex(m.base + m.size)) != std::string::npos);
  CHECK(st.error().message().find("first unmapped page at " + hex(hole)) != std::string::npos);
  // The mapped parts on either side still pass.
  CHECK(check_external_region(m.base, 5 * kPageSize, size_t{1} << 30).ok());
  CHECK(check_external_region(hole + kPageSize, 2 * kPageSize, size_t{1} << 30).ok());
}

TEST_CASE("a region above max_mr_size names both sizes", "[unit][memory]") {
  Mapping m(4 * kPageSize);
  REQUIRE(m.base != nullptr);
  auto st = check_external_region(m.base, 4 * kPageSize, 2 * kPageSize);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::too_large));
  CHECK(st.error().message().find("16384") != std::string::npos);
  CHECK(st.error().message().find("8192") != std::string::npos);
}

TEST_CASE("null or empty regions are invalid arguments", "[unit][memory]") {
  CHECK(check_external_region(nullptr, kPageSize, kPageSize).error().is(Errc::invalid_argument));
  Mapping m(kPageSize);
  CHECK(check_external_region(m.base, 0, kPageSize).error().is(Errc::invalid_argument));
}
