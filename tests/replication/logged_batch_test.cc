// The one record format, as the product writes it: the worked examples of
// docs/wire_format.md and docs/wal_format.md are compared with the bytes the product's own
// code writes (BatchBuilder for the wire, the channel's write-ahead log for the segment
// file), and a record damaged inside a logged batch is found and reported by the channel's
// recovery, naming the segment, the frame's offset and the frame.
#include <catch2/catch.hpp>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "durability.h"
#include "log_capture.h"
#include "rdmarepl/replication/detail/apply_records.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/layout.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::replication;
using rdmarepl::test::LogCapture;
using wal::test::TempDir;

namespace {

// The hex dumps of a doc sit between two marker lines, "<!-- bytes: NAME -->" and
// "<!-- end bytes: NAME -->". Every line of a ``` block between them is
// "<hex bytes>[   <annotation>]": two-digit hex tokens before the first run of three
// spaces. Prose between several blocks is skipped.
std::vector<uint8_t> doc_bytes(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  INFO("doc " << path << ", dump " << name);
  REQUIRE(in.good());
  const std::string begin = "<!-- bytes: " + name + " -->";
  const std::string end = "<!-- end bytes: " + name + " -->";
  std::vector<uint8_t> out;
  bool inside = false;
  bool fenced = false;
  bool closed = false;
  std::string line;
  while (!closed && std::getline(in, line)) {
    if (line == begin) {
      REQUIRE_FALSE(inside);
      inside = true;
    } else if (inside && line == end) {
      closed = true;
    } else if (inside && line.starts_with("```")) {
      fenced = !fenced;
    } else if (inside && fenced) {
      std::istringstream hex(line.substr(0, line.find("   ")));
      std::string tok;
      while (hex >> tok) {
        INFO("line: " << line);
        REQUIRE(tok.size() == 2);
        REQUIRE(std::isxdigit(static_cast<unsigned char>(tok[0])));
        REQUIRE(std::isxdigit(static_cast<unsigned char>(tok[1])));
        out.push_back(static_cast<uint8_t>(std::stoul(tok, nullptr, 16)));
      }
    }
  }
  REQUIRE(closed);
  REQUIRE_FALSE(fenced);
  REQUIRE_FALSE(out.empty());
  return out;
}

// 16 bytes a line, as the docs print them (shown when a dump and the bytes differ).
std::string dump(std::span<const uint8_t> b) {
  std::string s;
  char hex[4];
  for (size_t i = 0; i < b.size(); ++i) {
    std::snprintf(hex, sizeof hex, "%02x", b[i]);
    s += hex;
    s += (i % 16 == 15 || i + 1 == b.size()) ? "\n" : " ";
  }
  return s;
}

// 2025-12-01 12:00:00 UTC in nanoseconds: the leader's wall clock when it took the first
// write of the example (fixed here so that the bytes are the same in every run).
constexpr uint64_t kExampleTime = 1'764'590'400'000'000'000ull;

// The batch of both worked examples, the first batch of shard 2 of a new leader: seqs 1 and
// 2, put "ab" = "xyz" then erase "ab" 1.5 us later, encoded by the encoder the leader uses.
std::vector<std::byte> example_batch() {
  std::vector<std::byte> buf(align_batch(kBatchHeaderSize + record_size(2, 3) + record_size(2, 0)),
                             std::byte{0xee});
  BatchBuilder b;
  b.start(buf.data(), buf.size(), 2, 1);
  b.add(Op::put, "ab", "xyz", kExampleTime);
  b.add(Op::erase, "ab", "", kExampleTime + 1500);
  REQUIRE(b.seal() == buf.size());
  return buf;
}

std::span<const uint8_t> as_u8(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

// The options of a leader whose log is in `dir` (only what the log reads).
ChannelOptions log_options(const std::string& dir, Durability d) {
  ChannelOptions o;
  o.role = Role::leader;
  o.shards = 3;
  o.wal_dir = dir;
  o.durability = d;
  o.wal_segment_bytes = 64 << 10;
  o.wal_backend = WalBackend::file;
  return o;
}

// A store that keeps the seqs it was given.
struct SeqStore {
  std::vector<uint64_t> seqs;
  void apply(const Record& r) { seqs.push_back(r.seq); }
  StoreHooks hooks() {
    return {.store = this,
            .apply_batch = [](void* s, const BatchView& b, uint64_t after, uint64_t& skipped) {
              return detail::apply_records(*static_cast<SeqStore*>(s), b, after, skipped);
            }};
  }
};

// Appends each batch to the channel log in `dir`, as a leader does after sealing it.
void write_log(const std::string& dir, const std::vector<std::vector<std::byte>>& batches) {
  SeqStore store;
  auto wal = detail::Wal::open(log_options(dir, Durability::none), store.hooks(), {}, nullptr);
  INFO((wal.ok() ? std::string() : wal.error().message()));
  REQUIRE(wal.ok());
  for (const auto& b : batches) {
    BatchView v;
    REQUIRE(parse_batch(b, v) == BatchError::ok);
    REQUIRE((*wal)->append(v.header.shard, b, v.header.first_seq + v.header.record_count - 1,
                           v.header.record_count) != detail::Wal::kFailed);
  }
  (*wal)->close();
}

}  // namespace

TEST_CASE("docs/wire_format.md's worked example is the batch BatchBuilder encodes", "[docs]") {
  const auto batch = example_batch();
  INFO("the encoder wrote:\n" << dump(as_u8(batch)));
  const auto doc = doc_bytes(RDMAREPL_WIRE_FORMAT_DOC, "replication-batch");
  CHECK(dump(doc) == dump(as_u8(batch)));
  // What the example decodes to.
  BatchView v;
  REQUIRE(parse_batch(batch, v) == BatchError::ok);
  RecordCursor c(v);
  Record r;
  REQUIRE(c.next(r));
  CHECK((r.op == Op::put && r.key == "ab" && r.value == "xyz"));
  CHECK((r.seq == 1 && r.shard == 2 && r.timestamp == kExampleTime));
  REQUIRE(c.next(r));
  CHECK((r.op == Op::erase && r.key == "ab" && r.value.empty()));
  CHECK((r.seq == 2 && r.timestamp == kExampleTime + 1500));
  CHECK_FALSE(c.next(r));
}

TEST_CASE("docs/wal_format.md's worked example is the segment a channel's log writes", "[docs]") {
  TempDir dir;
  write_log(dir.path(), {example_batch()});
  const auto file = wal::test::read_file(dir.segment(1));
  INFO("the log wrote:\n" << dump(file));
  const auto doc = doc_bytes(RDMAREPL_WAL_FORMAT_DOC, "wal-segment");
  CHECK(dump(doc) == dump(file));
  // The example recovers: both records, in a channel that opens the log again.
  SeqStore store;
  detail::Wal::Recovered rec;
  auto wal = detail::Wal::open(log_options(dir.path(), Durability::none), store.hooks(), {}, &rec);
  REQUIRE(wal.ok());
  CHECK(store.seqs == std::vector<uint64_t>{1, 2});
  CHECK(rec.shard_seq == std::vector<uint64_t>{0, 0, 2});
}

TEST_CASE("recovery finds a damaged record inside a logged batch and names its frame",
          "[corruption]") {
  // Three batches of shard 1 (seqs 1-3, 4-6, 7-9), each three puts with 40-byte values.
  std::vector<std::vector<std::byte>> batches;
  for (uint64_t first : {1, 4, 7}) {
    std::vector<std::byte> buf(1024);
    BatchBuilder b;
    b.start(buf.data(), buf.size(), 1, first);
    for (uint64_t s = first; s < first + 3; ++s)
      b.add(Op::put, "key-" + std::to_string(s), std::string(40, 'v'), kExampleTime + s);
    buf.resize(b.seal());
    batches.push_back(std::move(buf));
  }
  TempDir pristine;
  write_log(pristine.path(), batches);
  wal::test::CollectingReporter clean;
  const auto frames = wal::test::read_all(pristine.path(), &clean);
  REQUIRE(clean.damages.empty());
  REQUIRE(frames.size() == 3);
  const uint64_t frame = frames[1].offset;  // the second batch: frame 2, seqs 4-6
  // The second record of that batch: after the batch header and the first record.
  const size_t rec = kBatchHeaderSize + record_size(5, 40);
  struct Damage {
    const char* what;
    size_t at;  // offset in the batch
  };
  const Damage damages[] = {{"a byte of the record's value", rec + kRecordHeaderSize + 5 + 17},
                            {"the low byte of the record's key_len", rec + 7}};
  for (const auto& d : damages) {
    INFO(d.what << " (batch offset " << d.at << ", frame at " << frame << ")");
    const std::string where = "segment 1 offset " + std::to_string(frame);

    // As the disk damages it: the frame's checksum fails; the log keeps batch 1, reports the
    // rest and the channel recovers seqs 1-3.
    TempDir disk;
    wal::test::copy_files(pristine, disk);
    wal::test::flip_byte(disk.segment(1), frame + wal::kFrameHeaderSize + d.at);
    {
      LogCapture log;
      SeqStore store;
      detail::Wal::Recovered r;
      auto wal =
          detail::Wal::open(log_options(disk.path(), Durability::none), store.hooks(), {}, &r);
      REQUIRE(wal.ok());
      CHECK(store.seqs == std::vector<uint64_t>{1, 2, 3});
      CHECK(r.shard_seq == std::vector<uint64_t>{0, 3, 0});
      std::string lines;
      for (const auto& l : log.lines()) lines += l + "\n";
      INFO("log:\n" << lines);
      CHECK(log.contains("(segment 1) offset " + std::to_string(frame) +
                         ": frame checksum mismatch"));
    }

    // As memory damages it before the log checksummed it (the frame's checksum matches the
    // damaged bytes): the batch's own CRC fails and recovery stops, naming the frame.
    TempDir mem;
    wal::test::copy_files(pristine, mem);
    wal::test::flip_byte(mem.segment(1), frame + wal::kFrameHeaderSize + d.at);
    wal::test::fix_frame_checksum(mem.segment(1), frame);
    SeqStore store;
    auto wal =
        detail::Wal::open(log_options(mem.path(), Durability::batch), store.hooks(), {}, nullptr);
    REQUIRE_FALSE(wal.ok());
    CHECK(wal.error().code() == Errc::corrupt);
    const std::string& msg = wal.error().message();
    INFO("error: " << msg);
    CHECK(msg.find(where) != std::string::npos);
    CHECK(msg.find("frame 2 (3 records)") != std::string::npos);
    CHECK(msg.find(std::string(describe(BatchError::bad_checksum))) != std::string::npos);
    CHECK(store.seqs == std::vector<uint64_t>{1, 2, 3});  // nothing of the damaged batch
  }
}
