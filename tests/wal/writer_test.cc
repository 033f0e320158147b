#include "rdmarepl/wal/writer.h"

#include <catch2/catch.hpp>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <string>

#include "rdmarepl/core/log.h"
#include "rdmarepl/features.h"

#include "wal/wal_fixtures.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

TEST_CASE("writer: frames carry the batch bytes unchanged", "[wal][writer]") {
  TempDir dir;
  auto batch = make_batch(1, 5, 100);
  {
    auto w = make_writer(dir, {.durability = Durability::none});
    auto lsn = w->append(batch.bytes(), batch.first_seq(), batch.last_seq(), batch.count());
    REQUIRE(lsn.ok());
    CHECK(*lsn == kFrameHeaderSize + batch.bytes().size());
    REQUIRE(w->close().ok());
  }
  CollectingReporter rep;
  auto frames = read_all(dir.path(), &rep);
  REQUIRE(frames.size() == 1);
  CHECK(std::equal(frames[0].payload.begin(), frames[0].payload.end(), batch.bytes().begin(),
                   batch.bytes().end()));
  CHECK(frames[0].first_seq == 1);
  CHECK(frames[0].last_seq == 5);
  CHECK(frames[0].record_count == 5);
  CHECK(rep.damages.empty());
}

TEST_CASE("writer: a gathered append writes the frame a contiguous one does", "[wal][writer]") {
  TempDir whole_dir, gathered_dir;
  auto batch = make_batch(1, 5, 300);
  const auto bytes = batch.bytes();
  REQUIRE(bytes.size() > 200);
  {
    auto w = make_writer(whole_dir, {.durability = Durability::none});
    REQUIRE(w->append(bytes, batch.first_seq(), batch.last_seq(), batch.count()).ok());
    REQUIRE(w->close().ok());
  }
  {
    auto w = make_writer(gathered_dir, {.durability = Durability::none});
    auto* p = const_cast<uint8_t*>(bytes.data());
    const iovec pieces[3] = {{p, 40}, {p + 40, 0}, {p + 40, bytes.size() - 40}};
    auto lsn = w->append_gather(pieces, batch.first_seq(), batch.last_seq(), batch.count());
    REQUIRE(lsn.ok());
    CHECK(*lsn == kFrameHeaderSize + bytes.size());
    const iovec too_many[5] = {{p, 1}, {p, 1}, {p, 1}, {p, 1}, {p, 1}};
    CHECK_FALSE(w->append_gather(too_many, 1, 1, 1).ok());
    REQUIRE(w->close().ok());
  }
  CHECK(read_file(whole_dir.segment(1)) == read_file(gathered_dir.segment(1)));
}

TEST_CASE("writer: segments are preallocated and sealed on close", "[wal][writer]") {
  TempDir dir;
  auto w = make_writer(dir, {.segment_size = 1 << 16, .durability = Durability::none});
  CHECK(file_size(dir.segment(1)) == (1u << 16));
  REQUIRE(w->append(bytes_of("abc"), 1, 1, 1).ok());
  REQUIRE(w->close().ok());
  CHECK(file_size(dir.segment(1)) == kSegmentHeaderSize + kFrameHeaderSize + 3 + kFrameHeaderSize);
  CHECK(w->durable_lsn() == w->written_lsn());
  ReadEnd end;
  read_all(dir.path(), nullptr, &end);
  CHECK(end.sealed);
  CHECK_FALSE(w->append(bytes_of("late"), 2, 2, 1).ok());
}

TEST_CASE("writer: durability policies and tickets", "[wal][writer]") {
  TempDir dir;
  check_durability_policies(dir, {});
  SECTION("a ticket never issued is an error") {
    auto w = make_writer(dir, {.durability = Durability::none});
    auto st = w->wait_durable(1);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().is(Errc::invalid_argument));
  }
}

TEST_CASE("writer: bad arguments are refused with a clear error", "[wal][writer]") {
  TempDir dir;
  auto w = make_writer(dir, {.durability = Durability::none});
  auto r = w->append(bytes_of("x"), 5, 4, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::invalid_argument));
  CHECK(r.error().message().find("first_seq 5 > last_seq 4") != std::string::npos);
  std::vector<uint8_t> big(kMaxFramePayload + 1);
  r = w->append(big, 1, 1, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::too_large));
  // Seqs may arrive out of order (several shards share one log).
  CHECK(w->append(bytes_of("b"), 10, 12, 2).ok());
  CHECK(w->append(bytes_of("a"), 7, 11, 2).ok());

  auto small = Writer::create(dir.path(), 9, 1, {.segment_size = 100});
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().is(Errc::invalid_argument));
  auto dup = Writer::create(dir.path(), 1, 1, {});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().is(Errc::already_exists));
}

TEST_CASE("writer: a frame that exactly fills a segment, then rotation", "[wal][writer]") {
  TempDir dir;
  constexpr uint64_t kSeg = 4096;
  auto w = make_writer(dir, {.segment_size = kSeg, .durability = Durability::none});
  // Header + frame header + payload == segment size exactly: no rotation yet.
  std::vector<uint8_t> fill(kSeg - kSegmentHeaderSize - kFrameHeaderSize, 0x11);
  REQUIRE(w->append(fill, 1, 1, 1).ok());
  CHECK(w->current_segment() == 1);
  REQUIRE(w->append(bytes_of("next"), 2, 2, 1).ok());
  CHECK(w->current_segment() == 2);
  CHECK(w->stats().rotations == 1);
  // With durability none, rotation seals segment 1 without syncing it; the next sync
  // covers the sealed segment and the new one together.
  CHECK(w->durable_lsn() == 0);
  REQUIRE(w->sync().ok());
  CHECK(w->durable_lsn() == w->written_lsn());
  CHECK(w->stats().syncs == 1);
  REQUIRE(w->close().ok());
  CollectingReporter rep;
  auto frames = read_all(dir.path(), &rep);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].payload == fill);
  CHECK(frames[1].segment == 2);
  CHECK(rep.damages.empty());
}

TEST_CASE("writer: a batch that does not fit moves whole to the next segment", "[wal][writer]") {
  TempDir dir;
  constexpr uint64_t kSeg = 4096;
  auto w = make_writer(dir, {.segment_size = kSeg, .durability = Durability::none});
  REQUIRE(w->append(std::vector<uint8_t>(3000, 1), 1, 1, 1).ok());
  REQUIRE(w->append(std::vector<uint8_t>(2000, 2), 2, 2, 1).ok());   // spans the boundary
  REQUIRE(w->append(std::vector<uint8_t>(10000, 3), 3, 3, 1).ok());  // larger than a segment
  REQUIRE(w->append(std::vector<uint8_t>(10, 4), 4, 4, 1).ok());
  REQUIRE(w->close().ok());
  CollectingReporter rep;
  auto frames = read_all(dir.path(), &rep);
  REQUIRE(frames.size() == 4);
  CHECK(frames[0].segment == 1);
  CHECK(frames[1].segment == 2);
  CHECK(frames[1].payload == std::vector<uint8_t>(2000, 2));
  CHECK(frames[2].segment == 3);
  CHECK(frames[2].payload.size() == 10000);
  CHECK(frames[3].segment == 4);
  CHECK(rep.damages.empty());
  // The header of each new segment records the next seq at its creation.
  auto seg3 = read_file(dir.segment(3));
  SegmentHeader h;
  REQUIRE(decode_segment_header(seg3.data(), &h) == HeaderCheck::ok);
  CHECK(h.first_seq == 3);
}

TEST_CASE("writer: what is written survives a crash of the process", "[wal][writer]") {
  TempDir dir, image;
  auto w = make_writer(dir, {.segment_size = 8192, .durability = Durability::none});
  for (uint64_t s = 1; s <= 50; ++s) REQUIRE(w->append(make_batch(s, 1).bytes(), s, s, 1).ok());
  copy_files(dir, image);  // segments as they are, the last one unsealed and preallocated
  CollectingReporter rep;
  ReadEnd end;
  auto frames = read_all(image.path(), &rep, &end);
  CHECK(frames.size() == 50);
  CHECK(rep.damages.empty());
  CHECK_FALSE(end.sealed);
}

TEST_CASE("writer: a std::byte batch is framed byte for byte", "[wal][writer]") {
  TempDir dir;
  const std::vector<uint8_t> raw = {0, 1, 2, 0xfe, 0xff};
  {
    auto w = make_writer(dir, {.durability = Durability::none});
    REQUIRE(w->append(std::as_bytes(std::span<const uint8_t>(raw)), 3, 4, 2).ok());
  }
  auto frames = read_all(dir.path(), nullptr);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].payload == raw);
}

TEST_CASE("writer: with durability batch, rotation seals durably", "[wal][writer]") {
  TempDir dir;
  constexpr uint64_t kSeg = 4096;
  auto w = make_writer(dir, {.segment_size = kSeg, .durability = Durability::batch});
  REQUIRE(w->append(std::vector<uint8_t>(3000, 1), 1, 1, 1).ok());
  const uint64_t syncs = w->stats().syncs;
  auto lsn = w->append(std::vector<uint8_t>(3000, 2), 2, 2, 1);
  REQUIRE(lsn.ok());
  CHECK(w->current_segment() == 2);
  CHECK(w->durable_lsn() >= *lsn);
  CHECK(w->stats().syncs == syncs + 1);
}

TEST_CASE("writer: io_uring submission writes the same frames, or falls back to pwritev",
          "[wal][writer][io_uring]") {
  // Frames of many sizes (including empty batches and rotations) through the io_uring
  // path; what is read back must be exactly what the pwritev path would have written.
  TempDir dir;
  std::vector<std::vector<uint8_t>> payloads;
  Submission used = Submission::pwrite;
  {
    auto w = make_writer(dir, {.segment_size = 8192,
                               .durability = Durability::batch,
                               .submission = Submission::io_uring});
    used = w->submission();
    for (uint64_t s = 1; s <= 40; ++s) {
      std::vector<uint8_t> p((s * 197) % 1500);
      for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(s * 31 + i);
      REQUIRE(w->append(p, s, s, 1).ok());
      payloads.push_back(std::move(p));
    }
    CHECK(w->stats().rotations > 0);
    REQUIRE(w->close().ok());
  }
  if (used != Submission::io_uring) {
    WARN("io_uring not usable here ("
         << (RDMAREPL_HAVE_URING ? "refused by the kernel" : "built without liburing")
         << "; the writer logged why): this run checked the pwritev fallback");
  }
  CollectingReporter rep;
  auto frames = read_all(dir.path(), &rep);
  CHECK(rep.damages.empty());
  REQUIRE(frames.size() == payloads.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    CHECK(frames[i].first_seq == i + 1);
    CHECK(frames[i].payload == payloads[i]);
  }
}

TEST_CASE("writer: pwrite submission stays pwrite", "[wal][writer]") {
  TempDir dir;
  auto w = make_writer(dir, {.durability = Durability::none});
  CHECK(w->submission() == Submission::pwrite);
  CHECK(std::string(to_string(Submission::io_uring)) == "io_uring");
  REQUIRE(w->close().ok());
}

namespace {
// Makes io_uring_setup fail with EPERM in this process from now on (a seccomp filter, as a
// container runtime would install). False when the kernel does not let us install it.
bool refuse_io_uring() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Child side of the fallback test; the exit code says what failed.
[[noreturn]] void fallback_child(const std::string& dir) {
  if (!refuse_io_uring()) ::_exit(77);
  std::string warning;
  log::set_sink([&](log::Level l, std::string_view m) {
    if (l == log::Level::warn) warning = std::string(m);
  });
  auto w = Writer::create(dir, 1, 1,
                          {.durability = Durability::none, .submission = Submission::io_uring});
  if (!w) ::_exit(10);
  if ((*w)->submission() != Submission::pwrite) ::_exit(11);
  if (warning.find("io_uring") == std::string::npos || warning.find("pwritev") == std::string::npos)
    ::_exit(12);
  for (uint64_t s = 1; s <= 3; ++s) {
    if (!(*w)->append(bytes_of("frame " + std::to_string(s)), s, s, 1)) ::_exit(13);
  }
  if (!(*w)->close()) ::_exit(14);
  ::_exit(0);
}
}  // namespace

TEST_CASE("writer: when the kernel refuses io_uring, the writer logs why and uses pwritev",
          "[wal][writer][io_uring]") {
  TempDir dir;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) fallback_child(dir.path());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    WARN("skipped: this kernel or container does not let a process install a seccomp filter");
    return;
  }
  // 10: create failed, 11: io_uring still in use, 12: no warning naming io_uring and
  // pwritev, 13: append failed, 14: close failed.
  REQUIRE(WEXITSTATUS(status) == 0);
  CollectingReporter rep;
  auto frames = read_all(dir.path(), &rep);
  CHECK(rep.damages.empty());
  REQUIRE(frames.size() == 3);
  CHECK(frames[2].payload == bytes_of("frame 3"));
}
