// Map-backed stores for the write-group and durable-position tests: MapStore plus the
// optional hooks (apply_group, and apply_batch, under one lock; a durable position per shard
// kept with the data), and counters of how they were called.
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

 protected:
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

// GroupMapStore that also takes a follower's records a batch at a time (apply_batch under
// one lock, as one atomic write): the channel then never calls apply() or apply_group().
struct BatchMapStore : GroupMapStore {
  uint64_t batches = 0;        // apply_batch() calls
  uint64_t batch_records = 0;  // records they carried
  uint64_t batch_breaks = 0;   // a call whose records were not consecutive seqs (must stay 0)

  using GroupMapStore::GroupMapStore;
  void apply_batch(const replication::RecordGroup& records) {
    std::lock_guard lock(mu);  // readers never see part of the batch
    ++batches;
    uint64_t expect = records.first_seq();
    uint64_t n = 0;
    for (const replication::Record& r : records) {
      if (r.seq != expect++ || r.shard != records.shard()) ++batch_breaks;
      apply_locked(r);
      ++n;
    }
    if (n != records.size() || expect - 1 != records.last_seq()) ++batch_breaks;
    batch_records += n;
  }
  [[nodiscard]] uint64_t counter(uint64_t BatchMapStore::*field) const {
    std::lock_guard lock(mu);
    return this->*field;
  }
  using GroupMapStore::counter;
};

}  // namespace rdmarepl::test
