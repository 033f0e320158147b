// Catch2 fixtures shared by the WAL tests: opening a Writer or a whole Log, the durability
// contract every writer backend keeps, and many threads appending to one Writer. They check
// with Catch2 assertions; the plain helpers are in wal_test_util.h.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rdmarepl/wal/log.h"
#include "rdmarepl/wal/writer.h"
#include "wal/wal_test_util.h"

namespace rdmarepl::wal::test {

// A store that records what recovery hands it: the checkpoint's payload and seq, and every
// frame replayed after it.
struct FakeStore final : RecoveryHandler {
  std::string restored;
  uint64_t restored_seq = 0;
  std::vector<OwnedFrame> frames;
  Status restore(CheckpointReader& c) override {
    restored_seq = c.seq();
    restored.resize(c.size());
    auto n = c.read({reinterpret_cast<uint8_t*>(restored.data()), restored.size()});
    if (!n) return std::move(n).error();
    return ok_status();
  }
  Status replay(const Frame& f) override {
    frames.push_back(own(f));
    return ok_status();
  }
};

// Log::open on `dir`, recovering into `store`; fails the test when it does not open.
inline std::unique_ptr<Log> open_log(const TempDir& dir, FakeStore& store, LogOptions o) {
  auto log = Log::open(dir.path(), o, store);
  if (!log) FAIL(log.error().to_string());
  return std::move(*log);
}

// Writer::create in `dir`, starting at segment `segment`; fails the test when it does not.
inline std::unique_ptr<Writer> make_writer(const TempDir& dir, WriterOptions o,
                                           uint64_t segment = 1) {
  auto w = Writer::create(dir.path(), segment, 1, o);
  if (!w) FAIL(w.error().to_string());
  return std::move(*w);
}

// What each durability policy promises, one SECTION each, for writers made from `o` in
// `dir` (the caller picks the backend and the segment size; each section sets durability).
inline void check_durability_policies(const TempDir& dir, WriterOptions o) {
  SECTION("none: durable only after wait_durable") {
    o.durability = Durability::none;
    auto w = make_writer(dir, o);
    auto a = w->append(bytes_of("a"), 1, 1, 1);
    auto b = w->append(bytes_of("b"), 2, 2, 1);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*b > *a);
    CHECK(w->durable_lsn() == 0);
    REQUIRE(w->wait_durable(*a).ok());
    // One sync covers everything written before it, so b is durable too.
    CHECK(w->durable_lsn() >= *b);
    CHECK(w->stats().syncs == 1);
  }
  SECTION("batch: durable when append returns") {
    o.durability = Durability::batch;
    auto w = make_writer(dir, o);
    for (uint64_t s = 1; s <= 5; ++s) {
      auto lsn = w->append(bytes_of("x"), s, s, 1);
      REQUIRE(lsn.ok());
      CHECK(w->durable_lsn() >= *lsn);
    }
    CHECK(w->stats().syncs == 5);
  }
  SECTION("interval: the flusher makes appends durable") {
    o.durability = Durability::interval;
    o.interval = std::chrono::milliseconds(1);
    auto w = make_writer(dir, o);
    auto lsn = w->append(bytes_of("x"), 1, 1, 1);
    REQUIRE(lsn.ok());
    // Waits for the flusher, not for a time: wait_durable would sync by itself, so poll.
    while (w->durable_lsn() < *lsn) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(w->stats().syncs >= 1);
  }
}

// `threads` threads append `per_thread` one-record batches each to `w` (seqs 1, 2, ... in
// the order the threads take them; the record of seq s has a value of value_size(s) bytes),
// and every append must succeed and be durable when it returns (Durability::batch).
inline void append_concurrently(Writer& w, int threads, int per_thread,
                                size_t (*value_size)(uint64_t seq)) {
  std::atomic<uint64_t> next_seq{1};
  std::atomic<int> not_durable{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        const uint64_t seq = next_seq.fetch_add(1);
        auto b = make_batch(seq, 1, value_size(seq));
        auto lsn = w.append(b.bytes(), seq, seq, 1);
        if (!lsn.ok()) {
          failures.fetch_add(1);
          continue;
        }
        if (w.durable_lsn() < *lsn) not_durable.fetch_add(1);
      }
    });
  }
  for (auto& t : pool) t.join();
  CHECK(failures.load() == 0);
  CHECK(not_durable.load() == 0);
}

// Every frame of the log in `dir`, which must read without damage and hold seqs 1..n, each
// in exactly one frame.
inline std::vector<OwnedFrame> read_each_seq_once(const std::string& dir, uint64_t n) {
  CollectingReporter rep;
  auto frames = read_all(dir, &rep);
  CHECK(rep.damages.empty());
  REQUIRE(frames.size() == n);
  std::vector<bool> seen(n + 1, false);
  for (const auto& f : frames) {
    REQUIRE(f.first_seq >= 1);
    REQUIRE(f.first_seq <= n);
    CHECK_FALSE(seen[f.first_seq]);
    seen[f.first_seq] = true;
  }
  return frames;
}

}  // namespace rdmarepl::wal::test
