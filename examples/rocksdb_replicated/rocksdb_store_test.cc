// RocksDbStore's hooks against a real RocksDB: a group is one WriteBatch with its position,
// the position survives a reopen, a resent batch applies only what lies past the position,
// and snapshot/restore copies every key and takes the checkpoint's seqs as the new position.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rocksdb_store.h"

using rocksrepl::RocksDbStore;
namespace rr = rdmarepl::replication;

namespace {

struct Dir {
  std::string path;
  Dir() {
    std::string t = (std::filesystem::temp_directory_path() / "rocksdb-store-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~Dir() { std::filesystem::remove_all(path); }
};

std::unique_ptr<RocksDbStore> open(const std::string& p) {
  auto s = RocksDbStore::open(p, 2);
  INFO((s.ok() ? std::string() : s.error().message()));
  REQUIRE(s.ok());
  return std::move(s).value();
}

// A batch of `ops` (seqs from `first`, shard 1) with every record but the last linked into
// one group, as the leader encodes replicate_group().
std::vector<std::byte> group_batch(const std::vector<rr::GroupOp>& ops, uint64_t first) {
  std::vector<std::byte> buf(4096);
  rr::BatchBuilder b;
  b.start(buf.data(), buf.size(), 1, first);
  for (size_t i = 0; i < ops.size(); ++i)
    b.add(ops[i].op, ops[i].key, ops[i].value, 0, i + 1 < ops.size() ? rr::kRecGroupNext : 0);
  buf.resize(b.seal());
  return buf;
}

std::string get(RocksDbStore& s, const std::string& k) {
  std::string v;
  return s.get(k, v) ? v : "<none>";
}

// Collects what a store writes as its snapshot, and reads it back.
struct Bytes final : rdmarepl::SnapshotWriter, rdmarepl::SnapshotReader {
  std::string data;
  size_t at = 0;
  rdmarepl::Status write(const void* p, size_t n) override {
    data.append(static_cast<const char*>(p), n);
    return rdmarepl::ok_status();
  }
  rdmarepl::Result<size_t> read(void* p, size_t n) override {
    n = std::min(n, data.size() - at);
    data.copy(static_cast<char*>(p), n, at);
    at += n;
    return n;
  }
};

}  // namespace

TEST_CASE("RocksDbStore: a group is one write with its position, kept across a reopen",
          "[rocksdb]") {
  Dir d;
  {
    auto s = open(d.path);
    CHECK(s->durable_seq(1) == 0);
    const auto bytes = group_batch(
        {{rr::Op::put, "a", "1"}, {rr::Op::put, "b", "2"}, {rr::Op::erase, "a", {}}}, 1);
    rr::BatchView v;
    REQUIRE(rr::parse_batch(bytes, v) == rr::BatchError::ok);
    uint64_t skipped = 0;
    CHECK(rr::detail::apply_records(*s, v, 0, skipped) == 3);  // one apply_batch call
    CHECK(s->durable_seq(1) == 3);
    CHECK(s->applied_count(1) == 3);
    CHECK(s->durable_seq(0) == 0);
  }
  auto s = open(d.path);
  CHECK(s->durable_seq(1) == 3);
  CHECK(s->applied_count(1) == 3);
  CHECK(get(*s, "a") == "<none>");
  CHECK(get(*s, "b") == "2");
}

TEST_CASE("RocksDbStore: a resent batch applies only its records past the position, in one write",
          "[rocksdb]") {
  Dir d;
  auto s = open(d.path);
  // Seqs 1..5 of shard 1: a single put, a group of three, a single erase.
  std::vector<std::byte> buf(4096);
  rr::BatchBuilder b;
  b.start(buf.data(), buf.size(), 1, 1);
  b.add(rr::Op::put, "x", "1", 0, 0);
  b.add(rr::Op::put, "y", "2", 0, rr::kRecGroupNext);
  b.add(rr::Op::put, "z", "3", 0, rr::kRecGroupNext);
  b.add(rr::Op::put, "x", "4", 0, 0);
  b.add(rr::Op::erase, "y", {}, 0, 0);
  buf.resize(b.seal());
  rr::BatchView v;
  REQUIRE(rr::parse_batch(buf, v) == rr::BatchError::ok);
  uint64_t skipped = 0;
  // The store already holds seqs 1 and 2 (a resend after a reconnect): 3..5 are applied.
  CHECK(rr::detail::apply_records(*s, v, 2, skipped) == 5);
  CHECK(skipped == 2);
  CHECK(s->durable_seq(1) == 5);
  CHECK(s->applied_count(1) == 3);
  CHECK(get(*s, "x") == "4");
  CHECK(get(*s, "y") == "<none>");
  CHECK(get(*s, "z") == "3");
  // The same batch again: all of it is at or below the position; nothing is written.
  skipped = 0;
  CHECK(rr::detail::apply_records(*s, v, 5, skipped) == 5);
  CHECK(skipped == 5);
  CHECK(s->applied_count(1) == 3);
}

TEST_CASE("RocksDbStore: snapshot and restore copy every key and take the checkpoint's seqs",
          "[rocksdb]") {
  Dir d1, d2;
  auto src = open(d1.path);
  auto dst = open(d2.path);
  const std::vector<rr::GroupOp> ops = {{rr::Op::put, "k1", "v1"}, {rr::Op::put, "k2", "v2"}};
  src->apply_committed(ops, rdmarepl::Ticket{1, 7});
  dst->apply_committed({{{rr::Op::put, "stale", "x"}}}, rdmarepl::Ticket{0, 99});
  Bytes b;
  REQUIRE(src->snapshot(b).ok());
  const std::vector<uint64_t> seqs = {5, 7};
  b.set_seqs(seqs);
  REQUIRE(dst->restore(b).ok());
  CHECK(get(*dst, "k1") == "v1");
  CHECK(get(*dst, "k2") == "v2");
  CHECK(get(*dst, "stale") == "<none>");  // the old contents are gone
  CHECK(dst->durable_seq(0) == 5);
  CHECK(dst->durable_seq(1) == 7);
}
