// A map-backed store for the write-group and durable-position tests: MapStore plus the
// optional hooks (apply_group under one lock, a durable position per shard kept with the
// data), and counters of how it was called.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rdmarepl/replication/record_group.h"
#include "test_store.h"

namespace rdmarepl::test {

struct GroupMapStore : MapStore {
  std::vector<uint64_t> position;  // per shard: the last seq applied (the durable position)
  uint64_t groups = 0;             // apply_group() calls
  uint64_t group_records = 0;      // records they carried
  uint64_t duplicates = 0;         // records at or below the position (must stay 0)
  uint64_t gaps = 0;               // records that skipped a seq (must stay 0)

  explicit GroupMapStore(uint32_t shards) : position(shards, 0) {}

  void apply(const replication::Record& r) {
    std::lock_guard lock(mu);
    apply_locked(r);
  }
  void apply_group(const replication::RecordGroup& g) {
    std::lock_guard lock(mu);  // readers never see part of the group
    ++groups;
    for (const replication::Record& r : g) {
      apply_locked(r);
      ++group_records;
    }
  }
  // A checkpoint replaces the data and, with it, the durable position.
  Status restore(replication::SnapshotReader& in) {
    RDMAREPL_TRY(MapStore::restore(in));
    std::lock_guard lock(mu);
    for (size_t i = 0; i < in.seqs().size() && i < position.size(); ++i) position[i] = in.seqs()[i];
    return ok_status();
  }
  [[nodiscard]] uint64_t durable_seq(uint32_t shard) const {
    std::lock_guard lock(mu);
    return position[shard];
  }
  // Calls `fn(data)` with the store locked: a consistent snapshot, as a reader sees it.
  template <class F>
  void read(F fn) const {
    std::lock_guard lock(mu);
    fn(data);
  }
  [[nodiscard]] uint64_t counter(uint64_t GroupMapStore::*field) const {
    std::lock_guard lock(mu);
    return this->*field;
  }

 private:
  void apply_locked(const replication::Record& r) {
    uint64_t& pos = position[r.shard];
    if (r.seq <= pos) ++duplicates;
    if (r.seq != pos + 1) ++gaps;
    pos = r.seq;
    ++applied;
    if (r.op == replication::Op::put)
      data[std::string(r.key)] = std::string(r.value);
    else
      data.erase(std::string(r.key));
  }
};

}  // namespace rdmarepl::test
