// 1000 trials of random damage (byte flips and truncations) over real WAL segments and
// checkpoint files: recovery never crashes, keeps exactly the frames that lie wholly
// before the first damaged byte, and reports where the dropped bytes start.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "rdmarepl/wal/checkpoint.h"
#include "rdmarepl/wal/log.h"
#include "rdmarepl/wal/writer.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {

constexpr int kTrials = 1000;

struct Pristine {
  TempDir dir;       // segments as a crash leaves them: last one unsealed, preallocated
  TempDir ckpt_dir;  // two checkpoints
  std::vector<OwnedFrame> frames;
  std::vector<uint64_t> segments;
};

void build(Pristine& p, std::mt19937_64& rng) {
  TempDir live;
  auto w =
      Writer::create(live.path(), 1, 1, {.segment_size = 4096, .durability = Durability::none});
  REQUIRE(w.ok());
  std::uniform_int_distribution<uint32_t> size(0, 500);
  for (uint64_t s = 1; s <= 60; ++s) {
    std::vector<uint8_t> payload(size(rng));
    for (auto& b : payload) b = static_cast<uint8_t>(rng());
    REQUIRE((*w)->append(payload, s, s, 1).ok());
  }
  for (const auto& e : std::filesystem::directory_iterator(live.path()))
    std::filesystem::copy_file(e.path(), p.dir.file(e.path().filename().string()));
  CollectingReporter rep;
  p.frames = read_all(p.dir.path(), &rep);
  REQUIRE(p.frames.size() == 60);
  REQUIRE(rep.damages.empty());
  for (const auto& f : p.frames)
    if (p.segments.empty() || p.segments.back() != f.segment) p.segments.push_back(f.segment);
  REQUIRE(p.segments.size() >= 3);

  for (uint64_t seq : {10u, 20u}) {
    auto c = CheckpointWriter::create(p.ckpt_dir.path(), seq);
    REQUIRE(c.ok());
    std::vector<uint8_t> data(300 + seq);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    REQUIRE(c->append(data).ok());
    REQUIRE(c->commit().ok());
  }
}

void copy_dir(const TempDir& from, const TempDir& to) {
  for (const auto& e : std::filesystem::directory_iterator(from.path()))
    std::filesystem::copy_file(e.path(), to.file(e.path().filename().string()));
}

uint64_t frame_end(const OwnedFrame& f) {
  return f.offset + kFrameHeaderSize + f.payload.size();
}

struct NullStore final : RecoveryHandler {
  std::vector<OwnedFrame> frames;
  Status restore(CheckpointReader&) override { return ok_status(); }
  Status replay(const Frame& f) override {
    frames.push_back(own(f));
    return ok_status();
  }
};

void segment_trial(const Pristine& p, std::mt19937_64& rng, int trial) {
  TempDir dir;
  copy_dir(p.dir, dir);
  const uint64_t seg = p.segments[rng() % p.segments.size()];
  const bool last = seg == p.segments.back();
  const std::string path = dir.segment(seg);
  const uint64_t size = file_size(path);
  const bool truncate = rng() % 3 == 0;
  uint64_t pos = 0;  // first damaged byte (truncation: the new size)
  if (truncate) {
    pos = rng() % size;
    shrink_file(path, pos);
  } else {
    std::set<uint64_t> at;
    const int flips = 1 + static_cast<int>(rng() % 3);
    while (at.size() < static_cast<size_t>(flips)) {
      // Half of the flips land near the frames, where they matter most.
      const uint64_t span = rng() % 2 == 0 ? size : std::min<uint64_t>(size, 1200);
      at.insert(rng() % span);
    }
    for (uint64_t o : at) flip_byte(path, o, static_cast<uint8_t>(1u << (rng() % 8)));
    pos = *at.begin();
  }
  INFO("trial " << trial << ": segment " << seg << (last ? " (last)" : "") << ", "
                << (truncate ? "truncated to " : "first flip at ") << pos);

  std::vector<OwnedFrame> expect;
  uint64_t valid_end = pos < kSegmentHeaderSize ? 0 : kSegmentHeaderSize;
  bool at_boundary = pos == kSegmentHeaderSize;
  for (const auto& f : p.frames) {
    if (f.segment < seg || (f.segment == seg && frame_end(f) <= pos)) expect.push_back(f);
    if (f.segment == seg && frame_end(f) <= pos && pos >= kSegmentHeaderSize)
      valid_end = frame_end(f);
    if (f.segment == seg && frame_end(f) == pos) at_boundary = true;
  }

  CollectingReporter rep;
  ReadEnd end;
  auto got = read_all(dir.path(), &rep, &end);
  REQUIRE(got == expect);

  const bool lost = expect.size() != p.frames.size();
  // Cutting the last segment exactly at a frame boundary is indistinguishable from a log
  // that ended there (docs/wal_format.md, "Known downsides").
  const bool silent_ok = truncate && last && at_boundary;
  if (!truncate || (lost && !silent_ok)) {
    REQUIRE_FALSE(rep.damages.empty());
  }
  if (!rep.damages.empty()) {
    const auto& d = rep.damages.front();
    CHECK(d.segment == seg);
    CHECK(d.offset == valid_end);
    CHECK(d.at_tail == last);
    if (d.reason != DamageReason::missing_end) CHECK(d.bytes_dropped > 0);
    for (size_t i = 1; i < rep.damages.size(); ++i)
      CHECK(rep.damages[i].reason == DamageReason::after_damage);
  }

  if (trial % 100 == 0) {
    // The whole recovery path on the same bytes: replays exactly the valid prefix, then
    // appends after it and reads back cleanly.
    NullStore store;
    LogOptions o;
    o.writer = {.segment_size = 4096, .durability = Durability::none};
    o.repair = true;
    o.reporter = &rep;
    auto log = Log::open(dir.path(), o, store);
    REQUIRE(log.ok());
    CHECK(store.frames.size() == expect.size());
    REQUIRE((*log)->append(bytes_of("after recovery"), 1000, 1000, 1).ok());
    REQUIRE((*log)->close().ok());
    CollectingReporter clean;
    auto again = read_all(dir.path(), &clean);
    CHECK(clean.damages.empty());
    REQUIRE(again.size() == expect.size() + 1);
    CHECK(again.back().payload == bytes_of("after recovery"));
  }
}

void checkpoint_trial(const Pristine& p, std::mt19937_64& rng, int trial) {
  TempDir dir;
  copy_dir(p.ckpt_dir, dir);
  const uint64_t victim = rng() % 2 == 0 ? 10 : 20;
  const std::string path = dir.file(checkpoint_file_name(victim));
  const uint64_t size = file_size(path);
  if (rng() % 3 == 0) {
    shrink_file(path, rng() % size);
  } else {
    flip_byte(path, rng() % size, static_cast<uint8_t>(1u << (rng() % 8)));
  }
  INFO("trial " << trial << ": checkpoint " << victim);
  CollectingReporter rep;
  auto r = load_newest_checkpoint(dir.path(), &rep);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  if (victim == 20) {
    CHECK((*r)->seq() == 10);
    REQUIRE(rep.damages.size() == 1);
    CHECK(rep.damages[0].segment == 20);
    CHECK(rep.damages[0].reason == DamageReason::bad_checkpoint);
  } else {
    CHECK((*r)->seq() == 20);
    CHECK(rep.damages.empty());
  }
}

}  // namespace

TEST_CASE("corruption: random flips and truncations never lose the valid prefix",
          "[wal][corruption]") {
  std::mt19937_64 rng(0x5eed0fa11);
  Pristine p;
  build(p, rng);
  for (int trial = 0; trial < kTrials; ++trial) {
    if (rng() % 100 < 15) {
      checkpoint_trial(p, rng, trial);
    } else {
      segment_trial(p, rng, trial);
    }
  }
}
