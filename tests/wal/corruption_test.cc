// 1000 trials of random damage (byte flips and truncations) over real WAL segments and
// checkpoint files: recovery never crashes, keeps exactly the frames that lie wholly
// before the first damaged byte (compared with the batches written), and reports what it
// dropped: the file, segment, offset and number of bytes of every run it skips. And one
// record damaged inside a logged replication batch: found, and reported with its frame.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
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
// Every kRecoveryEvery-th segment trial also runs the whole recovery path (Log::open with
// the checkpoints in the same directory) on the damaged bytes.
constexpr int kRecoveryEvery = 10;
constexpr uint64_t kCheckpointSeqs[] = {10, 20};

struct Written {
  uint64_t seq;
  std::vector<uint8_t> payload;
};

struct Pristine {
  TempDir dir;                   // segments as a crash leaves them: last one unsealed, preallocated
  TempDir ckpt_dir;              // two checkpoints
  std::vector<Written> written;  // what was appended, in order
  std::map<uint64_t, std::vector<uint8_t>> checkpoints;  // seq -> payload written
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
    p.written.push_back({s, std::move(payload)});
  }
  copy_files(live, p.dir);
  CollectingReporter rep;
  p.frames = read_all(p.dir.path(), &rep);
  REQUIRE(rep.damages.empty());
  // The undamaged log reads back exactly what was appended.
  REQUIRE(p.frames.size() == p.written.size());
  for (size_t i = 0; i < p.frames.size(); ++i) {
    REQUIRE(p.frames[i].first_seq == p.written[i].seq);
    REQUIRE(p.frames[i].last_seq == p.written[i].seq);
    REQUIRE(p.frames[i].record_count == 1);
    REQUIRE(p.frames[i].payload == p.written[i].payload);
  }
  for (const auto& f : p.frames)
    if (p.segments.empty() || p.segments.back() != f.segment) p.segments.push_back(f.segment);
  REQUIRE(p.segments.size() >= 3);

  for (uint64_t seq : kCheckpointSeqs) {
    auto c = CheckpointWriter::create(p.ckpt_dir.path(), seq);
    REQUIRE(c.ok());
    std::vector<uint8_t> data(300 + seq);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    REQUIRE(c->append(data).ok());
    REQUIRE(c->commit().ok());
    p.checkpoints[seq] = std::move(data);
  }
}

uint64_t frame_end(const OwnedFrame& f) {
  return f.offset + kFrameHeaderSize + f.payload.size();
}

// What SegmentReader drops from `valid_end` on: up to the last non-zero byte (trailing
// zeros are preallocated space), at least one byte.
uint64_t expected_dropped(const std::vector<uint8_t>& file, uint64_t valid_end) {
  size_t last = file.size();
  while (last > valid_end && file[last - 1] == 0) --last;
  return last > valid_end ? last - valid_end : 1;
}

// Flips 1-3 bits at distinct offsets or truncates; returns the first damaged byte (for a
// truncation, the new size).
uint64_t damage(const std::string& path, std::mt19937_64& rng, bool& truncated, uint64_t near = 0) {
  const uint64_t size = file_size(path);
  truncated = rng() % 3 == 0;
  if (truncated) {
    const uint64_t pos = rng() % size;
    shrink_file(path, pos);
    return pos;
  }
  std::set<uint64_t> at;
  const int flips = 1 + static_cast<int>(rng() % 3);
  while (at.size() < static_cast<size_t>(flips)) {
    // With `near`, half of the flips land in the first `near` bytes, where the frames are.
    const uint64_t span = near != 0 && rng() % 2 == 0 ? std::min<uint64_t>(size, near) : size;
    at.insert(rng() % span);
  }
  for (uint64_t o : at) flip_byte(path, o, static_cast<uint8_t>(1u << (rng() % 8)));
  return *at.begin();
}

// Restores the checkpoint into memory and records every replayed frame.
struct RecordingStore final : RecoveryHandler {
  int restores = 0;
  uint64_t checkpoint_seq = 0;
  std::vector<uint8_t> state;
  std::vector<OwnedFrame> frames;
  Status restore(CheckpointReader& c) override {
    ++restores;
    checkpoint_seq = c.seq();
    std::vector<uint8_t> chunk(128);
    for (;;) {
      auto n = c.read(chunk);
      if (!n) return std::move(n).error();
      if (*n == 0) break;
      state.insert(state.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(*n));
    }
    return ok_status();
  }
  Status replay(const Frame& f) override {
    frames.push_back(own(f));
    return ok_status();
  }
};

// Damages checkpoint `seq` in `dir` (truncation or flips anywhere in the file).
void damage_checkpoint(const TempDir& dir, uint64_t seq, std::mt19937_64& rng) {
  bool truncated = false;
  (void)damage(dir.file(checkpoint_file_name(seq)), rng, truncated);
}

void check_recovery(const Pristine& p, const TempDir& dir, const std::vector<OwnedFrame>& expect,
                    std::mt19937_64& rng) {
  // The checkpoints join the segments; half of the time the newest one is damaged too.
  copy_files(p.ckpt_dir, dir);
  const bool newest_damaged = rng() % 2 == 0;
  uint64_t newest_size = 0;
  if (newest_damaged) {
    damage_checkpoint(dir, 20, rng);
    newest_size = file_size(dir.file(checkpoint_file_name(20)));
  }
  const uint64_t ckpt = newest_damaged ? 10 : 20;
  INFO("recovery with checkpoint " << ckpt << (newest_damaged ? " (20 damaged)" : ""));

  CollectingReporter rep;
  RecordingStore store;
  LogOptions o;
  o.writer = {.segment_size = 4096, .durability = Durability::none};
  o.repair = true;
  o.reporter = &rep;
  auto log = Log::open(dir.path(), o, store);
  REQUIRE(log.ok());
  const RecoveryInfo& info = (*log)->recovery();
  CHECK(info.had_checkpoint);
  CHECK(info.checkpoint_seq == ckpt);
  REQUIRE(store.restores == 1);
  CHECK(store.checkpoint_seq == ckpt);
  CHECK(store.state == p.checkpoints.at(ckpt));
  if (newest_damaged) {
    REQUIRE_FALSE(rep.damages.empty());
    const auto& d = rep.damages.front();
    CHECK(d.reason == DamageReason::bad_checkpoint);
    CHECK(d.segment == 20);
    CHECK(d.offset == 0);
    CHECK(d.bytes_dropped == newest_size);
    CHECK(d.file == dir.file(checkpoint_file_name(20)));
  }
  // Replays exactly the valid frames after the checkpoint; the ones it covers are skipped.
  std::vector<OwnedFrame> after;
  uint64_t covered = 0;
  for (const auto& f : expect) {
    if (f.last_seq > ckpt) {
      after.push_back(f);
    } else {
      ++covered;
    }
  }
  CHECK(store.frames == after);
  CHECK(info.frames_replayed == after.size());
  CHECK(info.frames_skipped == covered);
  const uint64_t last = expect.empty() ? 0 : expect.back().last_seq;
  CHECK(info.last_seq == std::max(last, ckpt));

  // Appends after the valid prefix, then the log reads back cleanly.
  REQUIRE((*log)->append(bytes_of("after recovery"), 1000, 1000, 1).ok());
  REQUIRE((*log)->close().ok());
  CollectingReporter clean;
  auto again = read_all(dir.path(), &clean);
  CHECK(clean.damages.empty());
  REQUIRE(again.size() == expect.size() + 1);
  CHECK(again.back().payload == bytes_of("after recovery"));
}

void segment_trial(const Pristine& p, std::mt19937_64& rng, int trial, bool recovery) {
  TempDir dir;
  copy_files(p.dir, dir);
  // One segment, or (one trial in five) two: the lower one decides what survives.
  std::vector<uint64_t> victims{p.segments[rng() % p.segments.size()]};
  if (rng() % 5 == 0) {
    const uint64_t other = p.segments[rng() % p.segments.size()];
    if (other != victims[0]) victims.push_back(other);
  }
  std::sort(victims.begin(), victims.end());
  const uint64_t seg = victims.front();
  const bool last = seg == p.segments.back();
  bool truncate = false;
  uint64_t pos = 0;  // first damaged byte of `seg` (truncation: the new size)
  for (uint64_t v : victims) {
    bool t = false;
    const uint64_t at = damage(dir.segment(v), rng, t, 1200);
    if (v == seg) {
      truncate = t;
      pos = at;
    }
  }
  INFO("trial " << trial << ": segment " << seg << (last ? " (last)" : "") << ", "
                << (truncate ? "truncated to " : "first flip at ") << pos << "; " << victims.size()
                << " segment(s) damaged");

  std::vector<OwnedFrame> expect;
  uint64_t valid_end = pos < kSegmentHeaderSize ? 0 : kSegmentHeaderSize;
  bool at_boundary = pos == kSegmentHeaderSize;
  for (const auto& f : p.frames) {
    if (f.segment < seg || (f.segment == seg && frame_end(f) <= pos)) expect.push_back(f);
    if (f.segment == seg && frame_end(f) <= pos && pos >= kSegmentHeaderSize)
      valid_end = frame_end(f);
    if (f.segment == seg && frame_end(f) == pos) at_boundary = true;
  }
  // The valid prefix is a prefix of what was written.
  REQUIRE(expect.size() <= p.written.size());
  for (size_t i = 0; i < expect.size(); ++i) REQUIRE(expect[i].payload == p.written[i].payload);

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
    // The first report: where the valid prefix ends in the damaged segment and how many
    // bytes after it were dropped.
    const auto& d = rep.damages.front();
    CHECK(d.segment == seg);
    CHECK(d.file == dir.segment(seg));
    CHECK(d.offset == valid_end);
    CHECK(d.at_tail == last);
    if (d.reason == DamageReason::missing_end) {
      CHECK(d.bytes_dropped == 0);
    } else {
      CHECK(d.bytes_dropped == expected_dropped(read_file(dir.segment(seg)), valid_end));
    }
    // Then every later segment, whole.
    std::vector<uint64_t> later;
    for (uint64_t s : p.segments)
      if (s > seg) later.push_back(s);
    REQUIRE(rep.damages.size() == 1 + later.size());
    uint64_t total = d.bytes_dropped;
    for (size_t i = 0; i < later.size(); ++i) {
      const auto& l = rep.damages[i + 1];
      CHECK(l.reason == DamageReason::after_damage);
      CHECK(l.segment == later[i]);
      CHECK(l.offset == 0);
      CHECK(l.bytes_dropped == file_size(dir.segment(later[i])));
      CHECK_FALSE(l.at_tail);
      total += l.bytes_dropped;
    }
    CHECK(end.damaged);
    CHECK(end.bytes_dropped == total);
    CHECK(end.damaged_mid_log == !last);
  } else {
    CHECK_FALSE(end.damaged);
  }

  if (recovery) check_recovery(p, dir, expect, rng);
}

void checkpoint_trial(const Pristine& p, std::mt19937_64& rng, int trial) {
  TempDir dir;
  copy_files(p.ckpt_dir, dir);
  // One checkpoint damaged, or (one trial in ten) both.
  const uint64_t pick = rng() % 10;
  std::set<uint64_t> victims;
  if (pick == 0) {
    victims = {10, 20};
  } else {
    victims = {pick % 2 == 0 ? 10u : 20u};
  }
  for (uint64_t v : victims) damage_checkpoint(dir, v, rng);
  INFO("trial " << trial << ": checkpoint(s) " << *victims.begin()
                << (victims.size() > 1 ? " and 20" : ""));

  // The loader walks from the newest down and reports every damaged one it passes.
  std::vector<uint64_t> reported;
  std::optional<uint64_t> want;
  for (auto it = std::rbegin(kCheckpointSeqs); it != std::rend(kCheckpointSeqs); ++it) {
    if (victims.count(*it) == 0) {
      want = *it;
      break;
    }
    reported.push_back(*it);
  }

  CollectingReporter rep;
  auto r = load_newest_checkpoint(dir.path(), &rep);
  REQUIRE(r.ok());
  REQUIRE(r->has_value() == want.has_value());
  if (want) {
    CHECK((*r)->seq() == *want);
    const auto& data = p.checkpoints.at(*want);
    CHECK((*r)->size() == data.size());
    std::vector<uint8_t> got;
    std::vector<uint8_t> chunk(64);
    for (;;) {
      auto n = (*r)->read(chunk);
      REQUIRE(n.ok());
      if (*n == 0) break;
      got.insert(got.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(*n));
    }
    CHECK(got == data);
  }
  REQUIRE(rep.damages.size() == reported.size());
  for (size_t i = 0; i < reported.size(); ++i) {
    const auto& d = rep.damages[i];
    const std::string path = dir.file(checkpoint_file_name(reported[i]));
    CHECK(d.reason == DamageReason::bad_checkpoint);
    CHECK(d.segment == reported[i]);
    CHECK(d.file == path);
    CHECK(d.offset == 0);
    CHECK(d.bytes_dropped == file_size(path));
  }
}

}  // namespace

TEST_CASE("corruption: random flips and truncations never lose the valid prefix",
          "[wal][corruption]") {
  std::mt19937_64 rng(0x5eed0fa11);
  Pristine p;
  build(p, rng);
  int segment_trials = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    if (rng() % 100 < 15) {
      checkpoint_trial(p, rng, trial);
    } else {
      segment_trial(p, rng, trial, segment_trials++ % kRecoveryEvery == 0);
    }
  }
}

TEST_CASE("corruption: a damaged record inside a logged batch is found and its frame reported",
          "[wal][corruption]") {
  // Four replication batches of three records each (seqs 1-3, 4-6, 7-9, 10-12), one
  // 1968-byte frame each, two to a 4 KiB segment: the damage is in the first segment, so
  // valid data after it is lost.
  TempDir pristine;
  std::vector<TestBatch> batches;
  {
    auto w = Writer::create(pristine.path(), 1, 1,
                            {.segment_size = 4096, .durability = Durability::none});
    REQUIRE(w.ok());
    for (uint64_t first : {1, 4, 7, 10}) {
      batches.emplace_back(first, 3, 600);
      const auto& b = batches.back();
      REQUIRE((*w)->append(b.bytes(), b.first_seq(), b.last_seq(), b.count()).ok());
    }
    REQUIRE((*w)->close().ok());
  }
  CollectingReporter clean;
  const auto frames = read_all(pristine.path(), &clean);
  REQUIRE(clean.damages.empty());
  REQUIRE(frames.size() == 4);
  REQUIRE(frames[1].segment == 1);
  REQUIRE(frames[3].segment == 2);
  const OwnedFrame& hit = frames[1];  // seqs 4-6
  // The second record of that batch ("key-5"), after the batch header and "key-4"'s record.
  const size_t rec = replication::kBatchHeaderSize + replication::record_size(5, 600);
  struct Case {
    const char* what;
    size_t at;  // offset in the batch
  };
  const Case cases[] = {
      {"a byte of the record's value", rec + replication::kRecordHeaderSize + 5 + 300},
      {"the low byte of the record's key_len", rec + 7}};
  for (const auto& c : cases) {
    INFO(c.what);
    // Damaged on the disk: the frame CRC fails. The reader keeps the batch before it (seqs
    // 1-3) and reports where the dropped bytes start (the damaged batch's frame) and that
    // valid data may be lost; the next segment is dropped whole.
    TempDir disk;
    copy_files(pristine, disk);
    flip_byte(disk.segment(1), hit.offset + kFrameHeaderSize + c.at);
    CollectingReporter rep;
    ReadEnd end;
    const auto got = read_all(disk.path(), &rep, &end);
    REQUIRE(got.size() == 1);
    CHECK((got[0].first_seq == 1 && got[0].last_seq == 3));
    REQUIRE(rep.damages.size() == 2);
    const auto& d = rep.damages[0];
    CHECK(d.reason == DamageReason::bad_checksum);
    CHECK(d.file == disk.segment(1));
    CHECK(d.segment == 1);
    CHECK(d.offset == hit.offset);
    CHECK_FALSE(d.at_tail);
    CHECK(rep.damages[1].reason == DamageReason::after_damage);
    CHECK(rep.damages[1].segment == 2);
    CHECK(end.damaged_mid_log);

    // Damaged before the log checksummed it (in memory; the frame CRC matches the damaged
    // bytes): every frame reads back, and the batch's own CRC is what finds the record.
    TempDir mem;
    copy_files(pristine, mem);
    flip_byte(mem.segment(1), hit.offset + kFrameHeaderSize + c.at);
    fix_frame_checksum(mem.segment(1), hit.offset);
    CollectingReporter none;
    const auto all = read_all(mem.path(), &none);
    CHECK(none.damages.empty());
    REQUIRE(all.size() == 4);
    for (size_t i = 0; i < all.size(); ++i) {
      replication::BatchView v;
      CHECK(parse_payload(all[i].payload, v) ==
            (i == 1 ? replication::BatchError::bad_checksum : replication::BatchError::ok));
    }
  }
}
