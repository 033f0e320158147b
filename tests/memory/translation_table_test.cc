#include "rdmarepl/memory/translation_table.h"

#include <catch2/catch.hpp>

using namespace rdmarepl;
using namespace rdmarepl::memory;

namespace {

// Fake addresses: the table never dereferences them.
transport::RegisteredRegion region(uintptr_t addr, size_t length, uint32_t key) {
  transport::RegisteredRegion r;
  r.addr = reinterpret_cast<void*>(addr);
  r.length = length;
  r.keys = {key, key + 1000};
  return r;
}
const void* at(uintptr_t a) {
  return reinterpret_cast<const void*>(a);
}

}  // namespace

TEST_CASE("translation at region boundaries", "[unit][memory]") {
  TranslationTable t;
  // [0x10000, 0x11000) and [0x11000, 0x13000) are adjacent; a gap follows up to 0x20000.
  REQUIRE(t.insert(region(0x10000, 0x1000, 1)).ok());
  REQUIRE(t.insert(region(0x11000, 0x2000, 2)).ok());
  REQUIRE(t.insert(region(0x20000, 0x1000, 3)).ok());

  CHECK_FALSE(t.lookup(at(0xffff)));             // one before the first byte
  CHECK(t.lookup(at(0x10000))->keys.lkey == 1);  // first byte
  CHECK(t.lookup(at(0x10fff))->keys.lkey == 1);  // last byte
  CHECK(t.lookup(at(0x11000))->keys.lkey == 2);  // one past the end = next adjacent region
  CHECK(t.lookup(at(0x12fff))->keys.lkey == 2);
  CHECK(t.lookup(at(0x12fff))->keys.rkey == 1002);
  CHECK_FALSE(t.lookup(at(0x13000)));  // one past the end, in the gap
  CHECK_FALSE(t.lookup(at(0x1ffff)));  // last byte of the gap
  CHECK(t.lookup(at(0x20000))->keys.lkey == 3);
  CHECK_FALSE(t.lookup(at(0x21000)));  // past everything

  // Ranges must lie inside one region.
  CHECK(t.lookup(at(0x10000), 0x1000));
  CHECK_FALSE(t.lookup(at(0x10000), 0x1001));  // crosses into the adjacent region
  CHECK(t.lookup(at(0x12000), 0x1000));
  CHECK_FALSE(t.lookup(at(0x12000), 0x1001));  // runs into the gap
  CHECK_FALSE(t.lookup(at(0x1f000), 0x2000));  // starts in the gap

  auto s = [&] {
    MemoryStats m;
    t.counters().fill(m);
    return m;
  }();
  CHECK(s.translation_hits == 8);
  CHECK(s.translation_misses == 7);
}

TEST_CASE("overlapping or empty regions are refused, erase removes by start", "[unit][memory]") {
  TranslationTable t;
  REQUIRE(t.insert(region(0x10000, 0x2000, 1)).ok());
  auto overlap_tail = t.insert(region(0x11000, 0x2000, 2));
  REQUIRE_FALSE(overlap_tail.ok());
  CHECK(overlap_tail.error().is(Errc::already_exists));
  CHECK(overlap_tail.error().message().find("0x10000") != std::string::npos);
  CHECK_FALSE(t.insert(region(0xf000, 0x1001, 3)).ok());   // overlaps the head by one byte
  CHECK_FALSE(t.insert(region(0x10800, 0x100, 4)).ok());   // inside
  CHECK_FALSE(t.insert(region(0x8000, 0x10000, 5)).ok());  // encloses
  CHECK(t.insert(region(0xf000, 0x1000, 6)).ok());         // adjacent below
  CHECK(t.insert(region(0x12000, 0x1000, 7)).ok());        // adjacent above
  CHECK(t.insert(region(0x30000, 0, 8)).error().is(Errc::invalid_argument));
  CHECK(t.size() == 3);

  CHECK_FALSE(t.erase(at(0x10001)));
  CHECK(t.erase(at(0x10000)));
  CHECK_FALSE(t.lookup(at(0x10000)));
  CHECK(t.lookup(at(0xffff))->keys.lkey == 6);
  CHECK(t.size() == 2);
}
