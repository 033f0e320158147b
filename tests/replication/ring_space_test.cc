#include "replication/ring_space.h"

#include <catch2/catch.hpp>

#include <deque>
#include <random>
#include <vector>

using rdmarepl::replication::RingSpace;

TEST_CASE("entries are placed in order and wrap without splitting", "[ring]") {
  RingSpace r(100);
  auto a = r.place(40);
  CHECK(a.offset == 0);
  auto b = r.place(40);
  CHECK(b.offset == 40);
  CHECK(r.where(30) == std::nullopt);  // 20 left at the end, nothing free at the start
  r.release(a.consumed);               // [0, 40) free again
  REQUIRE(r.where(30) == 0u);          // does not fit in [80, 100): wraps to 0
  auto c = r.place(30);
  CHECK(c.offset == 0);
  CHECK(c.consumed == 50);  // the 20 skipped bytes are charged to it
  CHECK(r.used() == 90);
  r.release(b.consumed);
  r.release(c.consumed);
  CHECK(r.used() == 0);
  CHECK(r.where(100) == 0u);
}

TEST_CASE("a full ring refuses, an empty ring restarts at 0", "[ring]") {
  RingSpace r(64);
  auto a = r.place(64);
  CHECK(r.where(8) == std::nullopt);
  CHECK_FALSE(r.can_extend(8));
  r.release(a.consumed);
  CHECK(r.used() == 0);
  CHECK(r.where(64) == 0u);
  CHECK(r.where(65) == std::nullopt);
  CHECK(r.where(0) == std::nullopt);
}

TEST_CASE("the newest entry grows in place only into free bytes", "[ring]") {
  RingSpace r(100);
  auto a = r.place(10);
  REQUIRE(r.can_extend(90));
  r.extend(50);  // a is now 60 bytes
  CHECK(r.used() == 60);
  CHECK_FALSE(r.can_extend(41));
  auto b = r.place(40);
  CHECK(b.offset == 60);
  CHECK_FALSE(r.can_extend(1));  // b ends at the end of the ring
  r.release(a.consumed + 50);
  CHECK(r.where(50) == 0u);
  auto c = r.place(20);
  CHECK(c.offset == 0);
  CHECK(r.can_extend(40));
  CHECK_FALSE(r.can_extend(41));  // would run into b at 60
}

// Model check: a shadow byte map proves that live entries never overlap and never cross
// the end, and that releasing everything returns the ring to empty.
TEST_CASE("random place/extend/release never overlaps live entries", "[ring]") {
  std::mt19937_64 rng(7);
  for (uint64_t cap : {64u, 100u, 1000u, 4096u}) {
    RingSpace r(cap);
    struct Live {
      uint64_t offset, len, consumed;
    };
    std::deque<Live> live;
    std::vector<int> owner(cap, 0);
    int next_id = 1;
    for (int step = 0; step < 20000; ++step) {
      const auto op = rng() % 3;
      if (op == 0 && !live.empty()) {
        auto e = live.front();
        live.pop_front();
        for (uint64_t i = e.offset; i < e.offset + e.len; ++i) owner[i] = 0;
        r.release(e.consumed);
      } else if (op == 1 && !live.empty()) {
        const uint64_t d = rng() % (cap / 4) + 1;
        if (r.can_extend(d)) {
          auto& e = live.back();
          REQUIRE(e.offset + e.len + d <= cap);
          for (uint64_t i = e.offset + e.len; i < e.offset + e.len + d; ++i) {
            REQUIRE(owner[i] == 0);
            owner[i] = -1;
          }
          e.len += d;
          e.consumed += d;
          r.extend(d);
        }
      } else {
        const uint64_t len = rng() % (cap / 3) + 1;
        if (auto at = r.where(len)) {
          auto p = r.place(len);
          REQUIRE(p.offset == *at);
          REQUIRE(p.offset + len <= cap);
          for (uint64_t i = p.offset; i < p.offset + len; ++i) {
            REQUIRE(owner[i] == 0);
            owner[i] = next_id;
          }
          ++next_id;
          live.push_back({p.offset, len, p.consumed});
        }
      }
      uint64_t used = 0;
      for (auto& e : live) used += e.consumed;
      REQUIRE(r.used() == used);
      REQUIRE(used <= cap);
    }
    while (!live.empty()) {
      r.release(live.front().consumed);
      live.pop_front();
    }
    CHECK(r.used() == 0);
  }
}
