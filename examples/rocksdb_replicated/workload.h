// The example's workload and its invariant. Writes are single puts ("k/<n>"), deletes of
// those keys, and write batches (rdmarepl groups, RocksDB WriteBatches on every node) that
// move an amount between the two counters of a pair ("pair/<i>/a", "pair/<i>/b", always
// summing to kPairSum) and put a few more keys.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rdmarepl/rdmarepl.h"

namespace rocksrepl {

inline constexpr int kPairCount = 64;
inline constexpr long kPairSum = 1000;

// One write as the application issues it: one op, or a batch of several.
struct Write {
  std::vector<std::string> keys, values;
  std::vector<rdmarepl::GroupOp> ops;  // views into keys / values
};

class Workload {
 public:
  Workload(uint64_t seed, size_t value_bytes, size_t batch_records)
      : rng_(seed), value_bytes_(value_bytes), batch_records_(batch_records) {}
  // The next write: 60% single puts, 15% deletes, 25% batches of batch_records records.
  void next(Write& w);

 private:
  std::mt19937_64 rng_;
  size_t value_bytes_;
  size_t batch_records_;
  uint64_t n_ = 0;
};

// Replicates `w` (one op, or a group) on `ch`; the status of the call.
template <class Ch>
rdmarepl::WriteResult replicate(Ch& ch, const Write& w) {
  if (w.ops.size() != 1) return ch.replicate_group(w.ops);
  const auto& op = w.ops.front();
  return op.op == rdmarepl::Op::put ? ch.replicate(op.key, op.value) : ch.erase(op.key);
}

// Checks the pair invariant on one RocksDB snapshot: every pair absent, or present with its
// two counters summing to kPairSum. Returns an empty string, or what is broken.
std::string check_pairs(rocksdb::DB& db);

}  // namespace rocksrepl
