// The persistent-memory backend where there is no persistent memory: ctest runs these
// WITHOUT PMEM_IS_PMEM_FORCE, in the temporary directory (an ordinary file system).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "rdmarepl/features.h"
#include "rdmarepl/wal/writer.h"

#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {

size_t count_files(const TempDir& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++n;
  return n;
}

// The override makes every mapping count as persistent memory: then there is nothing to
// test here.
bool forced() {
  const char* f = std::getenv("PMEM_IS_PMEM_FORCE");
  if (f != nullptr && std::string(f) == "1") {
    WARN("skipped: PMEM_IS_PMEM_FORCE=1 is set, so every directory maps as persistent memory");
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("pmem: required on a directory that is not DAX fails and names the directory",
          "[wal][pmem]") {
  if (forced()) return;
  TempDir dir;
  {
    // The temporary directory may itself be on DAX (tests/rxe runs with TMPDIR there).
    auto probe = Writer::create(dir.path(), 1, 1, {.durability = Durability::none});
    REQUIRE(probe.ok());
    if ((*probe)->backend() == Backend::pmem) {
      WARN("skipped: " << dir.path() << " is on a DAX file system");
      return;
    }
  }
  TempDir fresh;
  auto w = Writer::create(fresh.path(), 1, 1,
                          {.durability = Durability::batch, .backend = Backend::pmem});
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().is(Errc::unsupported));
  const std::string msg = w.error().message();
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains(fresh.path()));
  CHECK_THAT(msg, Catch::Contains("backend = auto or file"));
  if (RDMAREPL_HAVE_PMEM != 0) {
    CHECK_THAT(msg, Catch::Contains("not on a DAX file system"));
    CHECK_THAT(msg, Catch::Contains("-o dax"));
  } else {
    CHECK_THAT(msg, Catch::Contains("libpmem-dev"));
  }
  // Nothing is left behind: the directory serves the file backend next.
  CHECK(count_files(fresh) == 0);
  auto again = Writer::create(fresh.path(), 1, 1, {.durability = Durability::none});
  REQUIRE(again.ok());
  CHECK((*again)->backend() == Backend::file);
  REQUIRE((*again)->append(bytes_of("x"), 1, 1, 1).ok());
}

TEST_CASE("pmem: auto uses the file backend where segments do not map as pmem", "[wal][pmem]") {
  if (forced()) return;
  TempDir dir;
  auto w = Writer::create(dir.path(), 1, 1, {.segment_size = 4096, .durability = Durability::none});
  REQUIRE(w.ok());
  if ((*w)->backend() == Backend::pmem) {
    WARN("skipped: " << dir.path() << " is on a DAX file system");
    return;
  }
  CHECK((*w)->backend() == Backend::file);
  for (uint64_t s = 1; s <= 20; ++s)
    REQUIRE((*w)->append(std::vector<uint8_t>(500, static_cast<uint8_t>(s)), s, s, 1).ok());
  CHECK((*w)->stats().rotations >= 2);
  REQUIRE((*w)->close().ok());
  CHECK(read_all(dir.path(), nullptr).size() == 20);
}
