// Several threads append with Durability::batch: each append returns only once durable,
// and one fdatasync covers the appends queued behind it.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "rdmarepl/wal/writer.h"
#include "wal/wal_fixtures.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

TEST_CASE("group commit: concurrent appenders are durable on return", "[wal][concurrency]") {
  TempDir dir;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  auto created =
      Writer::create(dir.path(), 1, 1, {.segment_size = 16 << 10, .durability = Durability::batch});
  REQUIRE(created.ok());
  auto& w = **created;
  append_concurrently(w, kThreads, kPerThread, [](uint64_t) -> size_t { return 64; });
  const auto stats = w.stats();
  CHECK(stats.appends == kThreads * kPerThread);
  // Every append is covered by a group-commit sync or a rotation; never more syncs than
  // appends.
  CHECK(stats.syncs <= stats.appends);
  REQUIRE(w.close().ok());

  for (const auto& f : read_each_seq_once(dir.path(), kThreads * kPerThread)) {
    replication::BatchView v;
    REQUIRE(parse_payload(f.payload, v) == replication::BatchError::ok);
    CHECK(v.header.first_seq == f.first_seq);
  }
}

TEST_CASE("group commit: waiters on wait_durable share syncs", "[wal][concurrency]") {
  TempDir dir;
  auto created = Writer::create(dir.path(), 1, 1, {.durability = Durability::none});
  REQUIRE(created.ok());
  auto& w = **created;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  std::atomic<uint64_t> seq{1};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const uint64_t s = seq.fetch_add(1);
        auto lsn = w.append(bytes_of("v"), s, s, 1);
        if (!lsn.ok() || !w.wait_durable(*lsn).ok() || w.durable_lsn() < *lsn) errors.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors.load() == 0);
  CHECK(w.stats().syncs <= 200);
  CHECK(w.durable_lsn() == w.written_lsn());
}
