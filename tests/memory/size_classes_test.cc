#include "rdmarepl/memory/size_classes.h"

#include <catch2/catch.hpp>

using namespace rdmarepl::memory;

TEST_CASE("class_of picks the smallest class that holds the size", "[unit][memory]") {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    const size_t s = class_size(c);
    CHECK(class_of(s) == c);
    if (c > 0) CHECK(class_of(s / 2 + 1) == c);
    if (c + 1 < kNumClasses) CHECK(class_of(s + 1) == c + 1);
  }
  CHECK(class_of(1) == 0);
  CHECK(class_of(kMaxClassSize + 1) == kNoClass);
  CHECK(class_of(size_t{1} << 40) == kNoClass);
}

TEST_CASE("thread cache capacity is bounded in count and bytes", "[unit][memory]") {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    const uint32_t cap = thread_cache_capacity(c);
    CHECK(cap >= 2);
    CHECK(cap <= 64);
    if (cap > 2) CHECK(cap * class_size(c) <= (size_t{256} << 10));
  }
}
