// Catch2 fixtures shared by the WAL tests that open a whole Log (log_test.cc, pmem_test.cc)
// or load one Writer from several threads (group_commit_test.cc, pmem_test.cc). They check
// with Catch2 assertions; the plain helpers are in wal_test_util.h.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
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
