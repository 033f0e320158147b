#include "rdmarepl/wal/log.h"

#include <catch2/catch.hpp>

#include <filesystem>

#include "wal/wal_fixtures.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {
LogOptions opts(CollectingReporter* rep, uint64_t segment_size = 4096) {
  LogOptions o;
  o.writer.segment_size = segment_size;
  o.writer.durability = Durability::none;
  o.reporter = rep;
  return o;
}

void append_seqs(Log& log, uint64_t from, uint64_t to, size_t value_size = 50) {
  for (uint64_t s = from; s <= to; ++s) {
    auto b = make_batch(s, 1, value_size);
    REQUIRE(log.append(b.bytes(), s, s, 1).ok());
  }
}

size_t count_files(const TempDir& dir, std::string_view suffix) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    n += e.path().string().ends_with(suffix) ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("log: open, append, reopen replays everything in order", "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep));
    CHECK(store.frames.empty());
    CHECK(log->recovery().last_seq == 0);
    append_seqs(*log, 1, 100);
  }
  FakeStore store;
  auto log = open_log(dir, store, opts(&rep));
  REQUIRE(store.frames.size() == 100);
  for (uint64_t i = 0; i < 100; ++i) CHECK(store.frames[i].first_seq == i + 1);
  CHECK(log->recovery().last_seq == 100);
  CHECK(log->recovery().records_replayed == 100);
  CHECK(rep.damages.empty());
  append_seqs(*log, 101, 110);
  REQUIRE(log->close().ok());
  FakeStore again;
  open_log(dir, again, opts(&rep));
  CHECK(again.frames.size() == 110);
}

TEST_CASE("log: recovery = newest checkpoint + the frames after it", "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep));
    append_seqs(*log, 1, 60);
    auto ck = log->begin_checkpoint(40);
    REQUIRE(ck.ok());
    REQUIRE(ck->append(bytes_of("state@40")).ok());
    REQUIRE(log->commit_checkpoint(*ck).ok());
    append_seqs(*log, 61, 70);
  }
  FakeStore store;
  auto log = open_log(dir, store, opts(&rep));
  CHECK(store.restored == "state@40");
  CHECK(store.restored_seq == 40);
  CHECK(log->recovery().checkpoint_seq == 40);
  REQUIRE(store.frames.size() == 30);
  CHECK(store.frames.front().first_seq == 41);
  CHECK(store.frames.back().first_seq == 70);
  CHECK(log->recovery().last_seq == 70);
}

TEST_CASE("log: checkpoints delete the segments they cover, keeping two", "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  FakeStore store;
  auto log = open_log(dir, store, opts(&rep));
  append_seqs(*log, 1, 200, 100);  // ~35 frames per 4 KiB segment
  const size_t segments_before = count_files(dir, ".log");
  REQUIRE(segments_before > 4);
  for (uint64_t seq : {50u, 100u, 150u}) {
    auto ck = log->begin_checkpoint(seq);
    REQUIRE(ck.ok());
    REQUIRE(log->commit_checkpoint(*ck).ok());
  }
  CHECK(count_files(dir, ".ckpt") == 2);
  const size_t segments_after = count_files(dir, ".log");
  CHECK(segments_after < segments_before);
  REQUIRE(log->close().ok());
  // Falling back to the older kept checkpoint (100) still finds every frame after it.
  flip_byte(dir.file(checkpoint_file_name(150)), kCheckpointHeaderSize - 1);
  FakeStore again;
  auto reopened = open_log(dir, again, opts(&rep));
  CHECK(again.restored_seq == 100);
  REQUIRE_FALSE(again.frames.empty());
  CHECK(again.frames.front().last_seq <= 101);
  CHECK(again.frames.back().last_seq == 200);
  REQUIRE(rep.damages.size() == 1);
  CHECK(rep.damages[0].reason == DamageReason::bad_checkpoint);
}

TEST_CASE("log: a torn tail is cut off and the log continues after it", "[wal][log]") {
  TempDir dir, image;
  CollectingReporter rep;
  uint64_t torn_at = 0;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep, 1 << 16));
    append_seqs(*log, 1, 10);
    // Simulate a crash mid-write: copy the files while the log is open, then tear the
    // last frame of the copy.
    copy_files(dir, image);
  }
  const uint64_t seg = 1;
  auto frames = read_all(image.path(), nullptr);
  REQUIRE(frames.size() == 10);
  torn_at = frames.back().offset;
  flip_byte(image.segment(seg), torn_at + kFrameHeaderSize + 2);
  {
    FakeStore store;
    auto log = open_log(image, store, opts(&rep, 1 << 16));
    CHECK(store.frames.size() == 9);
    REQUIRE(rep.damages.size() == 1);
    CHECK(rep.damages[0].at_tail);
    CHECK(rep.damages[0].offset == torn_at);
    append_seqs(*log, 10, 12);
  }
  rep.damages.clear();
  FakeStore store;
  open_log(image, store, opts(&rep, 1 << 16));
  REQUIRE(store.frames.size() == 12);
  CHECK(store.frames.back().first_seq == 12);
  CHECK(rep.damages.empty());  // the torn bytes were truncated, never read again
}

TEST_CASE("log: damage before the tail fails open unless repair is asked", "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep));
    append_seqs(*log, 1, 100, 100);
  }
  auto frames = read_all(dir.path(), nullptr);
  REQUIRE(frames.back().segment >= 3);
  flip_byte(dir.segment(1), frames[3].offset + kFrameHeaderSize);
  {
    FakeStore store;
    auto log = Log::open(dir.path(), opts(&rep), store);
    REQUIRE_FALSE(log.ok());
    CHECK(log.error().is(Errc::corrupt));
    CHECK(log.error().message().find("repair") != std::string::npos);
  }
  rep.damages.clear();
  auto o = opts(&rep);
  o.repair = true;
  FakeStore store;
  auto log = open_log(dir, store, o);
  CHECK(store.frames.size() == 3);
  CHECK(count_files(dir, ".damaged") >= 2);
  append_seqs(*log, 101, 101);
  REQUIRE(log->close().ok());
  rep.damages.clear();
  FakeStore again;
  open_log(dir, again, opts(&rep));
  CHECK(again.frames.size() == 4);
  CHECK(rep.damages.empty());
}

TEST_CASE("log: leftover checkpoint temporaries are removed on open", "[wal][log]") {
  TempDir dir;
  write_file(dir.file(checkpoint_file_name(7) + ".tmp"), bytes_of("half written"));
  FakeStore store;
  CollectingReporter rep;
  auto log = open_log(dir, store, opts(&rep));
  CHECK_FALSE(std::filesystem::exists(dir.file(checkpoint_file_name(7) + ".tmp")));
  CHECK_FALSE(store.restored_seq);
}

TEST_CASE("log: truncate_after cuts back to a frame boundary across segments", "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep));  // 4 KiB segments: many of them
    append_seqs(*log, 1, 200);
    REQUIRE(log->close().ok());
  }
  const size_t segments_before = count_files(dir, ".log");
  REQUIRE(segments_before > 3);
  auto cut = truncate_after(dir.path(), 57);
  REQUIRE(cut.ok());
  CHECK(*cut);
  CHECK(count_files(dir, ".log") < segments_before);
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep));
    REQUIRE(store.frames.size() == 57);
    CHECK(store.frames.back().last_seq == 57);
    CHECK(log->recovery().last_seq == 57);
    CHECK(rep.damages.empty());  // a clean end, not damage
    // The log goes on from the cut: a different history after seq 57.
    append_seqs(*log, 58, 70, 20);
    REQUIRE(log->close().ok());
  }
  FakeStore again;
  open_log(dir, again, opts(&rep));
  REQUIRE(again.frames.size() == 70);
  CHECK(again.frames.back().last_seq == 70);
  // Nothing to cut: the log already ends there.
  auto none = truncate_after(dir.path(), 500);
  REQUIRE(none.ok());
  CHECK(*none);
}

TEST_CASE("log: truncate_after refuses a cut inside a frame, drops checkpoints above the cut",
          "[wal][log]") {
  TempDir dir;
  CollectingReporter rep;
  {
    FakeStore store;
    auto log = open_log(dir, store, opts(&rep, 1 << 20));
    for (uint64_t s = 1; s <= 40; s += 10) {  // frames of 10 records: 1-10, 11-20, ...
      auto b = make_batch(s, 10, 30);
      REQUIRE(log->append(b.bytes(), s, s + 9, 10).ok());
    }
    auto ck = log->begin_checkpoint(30);
    REQUIRE(ck.ok());
    REQUIRE(ck->append(bytes_of("state@30")).ok());
    REQUIRE(log->commit_checkpoint(*ck).ok());
    REQUIRE(log->close().ok());
  }
  auto inside = truncate_after(dir.path(), 15);
  REQUIRE(inside.ok());
  CHECK_FALSE(*inside);
  CHECK(count_files(dir, ".ckpt") == 1);  // a refused cut changes nothing
  // The log still holds 1-20 from its start: the cut goes, and the checkpoint at 30 with it.
  auto boundary = truncate_after(dir.path(), 20);
  REQUIRE(boundary.ok());
  CHECK(*boundary);
  CHECK(count_files(dir, ".ckpt") == 0);
  FakeStore store;
  auto log = open_log(dir, store, opts(&rep, 1 << 20));
  CHECK(store.restored.empty());
  CHECK(log->recovery().last_seq == 20);
  REQUIRE(store.frames.size() == 2);
}
