// The persistent-memory backend of the WAL writer. ctest runs these with
// PMEM_IS_PMEM_FORCE=1 (libpmem's documented override), so a mapping of a file on an
// ordinary file system counts as persistent memory: the code paths are the real ones, the
// durability is not (see docs/wal_format.md, "Backends"). tests/rxe runs the same binary on
// a real DAX file system in a VM, without the override (TMPDIR points there).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rdmarepl/features.h"
#include "rdmarepl/wal/log.h"
#include "rdmarepl/wal/writer.h"

#include "wal/wal_fixtures.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {

// Small segments: the DAX test in tests/rxe has a 128 MiB persistent-memory region.
constexpr uint64_t kSmallSegment = 1 << 20;

// True when the pmem backend can run here; otherwise says why the test is skipped.
bool pmem_usable() {
  if (RDMAREPL_HAVE_PMEM == 0) {
    WARN("skipped: this build has no libpmem (RDMAREPL_WITH_PMEM found no libpmem-dev)");
    return false;
  }
  return true;
}

LogOptions log_opts(Backend backend, CollectingReporter* rep, uint64_t segment_size,
                    Durability d = Durability::none) {
  LogOptions o;
  o.writer.segment_size = segment_size;
  o.writer.durability = d;
  o.writer.backend = backend;
  o.repair = d != Durability::batch;
  o.reporter = rep;
  return o;
}

// Batches of varying sizes (some empty-valued, some large) with seqs first..last.
void append_mixed(Writer& w, uint64_t first, uint64_t last) {
  for (uint64_t s = first; s <= last; ++s) {
    const size_t value = (s * 37) % 700;
    auto b = make_batch(s, 1, value);
    REQUIRE(w.append(b.bytes(), s, s, 1).ok());
  }
}

std::vector<std::string> segment_names(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Every file of `a` has a twin of the same name and bytes in `b`, and no more files.
void check_identical(const TempDir& a, const TempDir& b) {
  const auto names = segment_names(a);
  REQUIRE(names == segment_names(b));
  REQUIRE_FALSE(names.empty());
  for (const auto& n : names) {
    INFO(n);
    CHECK(read_file(a.file(n)) == read_file(b.file(n)));
  }
}

}  // namespace

TEST_CASE("pmem: the backend is chosen on the first segment and reported", "[wal][pmem]") {
  if (!pmem_usable()) return;
  TempDir dir;
  SECTION("pmem requested") {
    auto w = make_writer(
        dir,
        {.segment_size = kSmallSegment, .durability = Durability::none, .backend = Backend::pmem});
    CHECK(w->backend() == Backend::pmem);
  }
  SECTION("auto picks pmem when the segment maps as persistent memory") {
    auto w = make_writer(dir, {.segment_size = kSmallSegment, .durability = Durability::none});
    CHECK(w->backend() == Backend::pmem);
  }
  SECTION("file requested never maps") {
    auto w = make_writer(
        dir,
        {.segment_size = kSmallSegment, .durability = Durability::none, .backend = Backend::file});
    CHECK(w->backend() == Backend::file);
  }
  SECTION("io_uring is dropped for pmem") {
    auto w = make_writer(dir, {.segment_size = kSmallSegment,
                               .durability = Durability::none,
                               .submission = Submission::io_uring,
                               .backend = Backend::pmem});
    CHECK(w->backend() == Backend::pmem);
    CHECK(w->submission() == Submission::pwrite);
  }
}

TEST_CASE("pmem: append, close and recover round trip", "[wal][pmem]") {
  if (!pmem_usable()) return;
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, log_opts(Backend::pmem, &rep, 1 << 16, Durability::batch));
    REQUIRE(log->writer().backend() == Backend::pmem);
    CHECK(store.frames.empty());
    append_mixed(log->writer(), 1, 40);
    REQUIRE(log->close().ok());
  }
  auto frames = read_all(dir.path(), &rep);
  REQUIRE(frames.size() == 40);
  for (uint64_t s = 1; s <= 40; ++s) {
    auto b = make_batch(s, 1, (s * 37) % 700);
    CHECK(frames[s - 1].first_seq == s);
    CHECK(frames[s - 1].payload == std::vector<uint8_t>(b.bytes().begin(), b.bytes().end()));
  }
  {
    FakeStore store;
    auto log = open_log(dir, store, log_opts(Backend::pmem, &rep, 1 << 16, Durability::batch));
    CHECK(store.frames == frames);
    append_mixed(log->writer(), 41, 45);
  }
  {
    // The file backend recovers and continues a log the pmem backend wrote.
    FakeStore store;
    auto log = open_log(dir, store, log_opts(Backend::file, &rep, 1 << 16, Durability::batch));
    REQUIRE(log->writer().backend() == Backend::file);
    REQUIRE(store.frames.size() == 45);
    CHECK(store.frames.back().first_seq == 45);
    append_mixed(log->writer(), 46, 47);
  }
  auto all = read_all(dir.path(), &rep);
  REQUIRE(all.size() == 47);
  CHECK(all.back().first_seq == 47);
  CHECK(rep.damages.empty());
}

TEST_CASE("pmem: durability policies keep their meaning", "[wal][pmem]") {
  if (!pmem_usable()) return;
  TempDir dir;
  check_durability_policies(dir, {.segment_size = kSmallSegment, .backend = Backend::pmem});
}

TEST_CASE("pmem: segments rotate and seal like the file backend's", "[wal][pmem]") {
  if (!pmem_usable()) return;
  TempDir dir;
  constexpr uint64_t kSeg = 4096;
  for (auto d : {Durability::none, Durability::batch}) {
    TempDir sub;
    auto w = make_writer(sub, {.segment_size = kSeg, .durability = d, .backend = Backend::pmem});
    append_mixed(*w, 1, 60);
    CHECK(w->stats().rotations >= 5);
    CHECK(w->current_segment() == w->stats().rotations + 1);
    // Sealed segments were truncated after their end frame (which may lie past the
    // preallocated size); the open one is preallocated.
    for (uint64_t n = 1; n < w->current_segment(); ++n) {
      auto seg = read_file(sub.segment(n));
      REQUIRE(seg.size() <= kSeg + kFrameHeaderSize);
      CHECK(FrameHeader::decode(seg.data() + seg.size() - kFrameHeaderSize).type == FrameType::end);
    }
    CHECK(file_size(sub.segment(w->current_segment())) == kSeg);
    REQUIRE(w->close().ok());
    CHECK(w->durable_lsn() == w->written_lsn());
    CollectingReporter rep;
    ReadEnd end;
    auto frames = read_all(sub.path(), &rep, &end);
    REQUIRE(frames.size() == 60);
    for (uint64_t s = 1; s <= 60; ++s) CHECK(frames[s - 1].first_seq == s);
    CHECK(end.sealed);
    CHECK(rep.damages.empty());
  }
  // A frame that cannot fit even an empty segment is refused, and the writer goes on.
  auto w = make_writer(
      dir, {.segment_size = kSeg, .durability = Durability::none, .backend = Backend::pmem});
  auto big = w->append(std::vector<uint8_t>(kSeg, 7), 1, 1, 1);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().is(Errc::too_large));
  CHECK(w->append(bytes_of("small"), 2, 2, 1).ok());
}

TEST_CASE("pmem: a torn tail is cut off and the log continues after it", "[wal][pmem]") {
  if (!pmem_usable()) return;
  TempDir dir, image;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, log_opts(Backend::pmem, &rep, 1 << 16));
    append_mixed(log->writer(), 1, 10);
    // A crash: the files as they are while the writer is open (the last segment mapped,
    // unsealed, preallocated), then the last frame torn.
    copy_files(dir, image);
  }
  auto frames = read_all(image.path(), nullptr);
  REQUIRE(frames.size() == 10);
  const uint64_t torn_at = frames.back().offset;
  flip_byte(image.segment(1), torn_at + kFrameHeaderSize + 2);
  {
    FakeStore store;
    auto log = open_log(image, store, log_opts(Backend::pmem, &rep, 1 << 16));
    REQUIRE(log->writer().backend() == Backend::pmem);
    CHECK(store.frames.size() == 9);
    REQUIRE(rep.damages.size() == 1);
    CHECK(rep.damages[0].at_tail);
    CHECK(rep.damages[0].offset == torn_at);
    append_mixed(log->writer(), 10, 12);
  }
  rep.damages.clear();
  FakeStore store;
  open_log(image, store, log_opts(Backend::pmem, &rep, 1 << 16));
  REQUIRE(store.frames.size() == 12);
  CHECK(store.frames.back().first_seq == 12);
  CHECK(rep.damages.empty());
}

TEST_CASE("pmem: segments are byte for byte those of the file backend", "[wal][pmem]") {
  if (!pmem_usable()) return;
  auto d = GENERATE(Durability::none, Durability::batch, Durability::interval);
  INFO("durability " << to_string(d));
  TempDir file_dir, pmem_dir;
  constexpr uint64_t kSeg = 8192;
  auto fw =
      make_writer(file_dir, {.segment_size = kSeg, .durability = d, .backend = Backend::file});
  auto pw =
      make_writer(pmem_dir, {.segment_size = kSeg, .durability = d, .backend = Backend::pmem});
  REQUIRE(fw->backend() == Backend::file);
  REQUIRE(pw->backend() == Backend::pmem);
  append_mixed(*fw, 1, 70);
  append_mixed(*pw, 1, 70);
  REQUIRE(fw->append(std::vector<uint8_t>(), 71, 71, 0).ok());  // an empty payload
  REQUIRE(pw->append(std::vector<uint8_t>(), 71, 71, 0).ok());
  CHECK(fw->written_lsn() == pw->written_lsn());
  CHECK(fw->stats().rotations == pw->stats().rotations);
  REQUIRE(pw->stats().rotations >= 3);
  // While open: sealed segments and the open, preallocated one.
  check_identical(file_dir, pmem_dir);
  REQUIRE(fw->close().ok());
  REQUIRE(pw->close().ok());
  check_identical(file_dir, pmem_dir);
}

TEST_CASE("pmem: concurrent appenders under group commit are durable on return",
          "[wal][pmem][concurrency]") {
  if (!pmem_usable()) return;
  TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  auto w = make_writer(
      dir, {.segment_size = 16 << 10, .durability = Durability::batch, .backend = Backend::pmem});
  auto value_size = [](uint64_t seq) -> size_t { return 64 + seq % 300; };
  append_concurrently(*w, kThreads, kPerThread, value_size);
  CHECK(w->stats().appends == kThreads * kPerThread);
  CHECK(w->stats().rotations >= 3);
  REQUIRE(w->close().ok());
  for (const auto& f : read_each_seq_once(dir.path(), kThreads * kPerThread)) {
    auto b = make_batch(f.first_seq, 1, value_size(f.first_seq));
    CHECK(f.payload == std::vector<uint8_t>(b.bytes().begin(), b.bytes().end()));
  }
}
