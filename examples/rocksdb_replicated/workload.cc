#include "workload.h"

#include <fmt/format.h>

#include <memory>

namespace rocksrepl {

namespace {

std::string pair_key(int i, char side) {
  return fmt::format("pair/{:03}/{}", i, side);
}

void add(Write& w, rdmarepl::Op op, std::string key, std::string value = {}) {
  w.keys.push_back(std::move(key));
  w.values.push_back(std::move(value));
  w.ops.push_back({op, {}, {}});
}

}  // namespace

void Workload::next(Write& w) {
  w.keys.clear();
  w.values.clear();
  w.ops.clear();
  ++n_;
  const uint64_t dice = rng_() % 100;
  const std::string single = fmt::format("k/{:05}", rng_() % 5000);
  if (dice < 60) {
    add(w, rdmarepl::Op::put, single, std::string(value_bytes_, static_cast<char>('a' + n_ % 26)));
  } else if (dice < 75) {
    add(w, rdmarepl::Op::erase, single);
  } else {
    const int p = static_cast<int>(rng_() % kPairCount);
    const long x = static_cast<long>(rng_() % kPairSum);
    add(w, rdmarepl::Op::put, pair_key(p, 'a'), std::to_string(x));
    add(w, rdmarepl::Op::put, pair_key(p, 'b'), std::to_string(kPairSum - x));
    for (size_t i = 2; i < batch_records_; ++i)
      add(w, rdmarepl::Op::put, fmt::format("k/{:05}", rng_() % 5000),
          std::string(value_bytes_, static_cast<char>('A' + i % 26)));
  }
  // The views are taken once the strings stopped moving.
  for (size_t i = 0; i < w.ops.size(); ++i) {
    w.ops[i].key = w.keys[i];
    w.ops[i].value = w.values[i];
  }
}

std::string check_pairs(rocksdb::DB& db) {
  const rocksdb::Snapshot* snap = db.GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::string broken;
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(ro));
  long sum[kPairCount] = {};
  int seen[kPairCount] = {};
  for (it->Seek("pair/"); it->Valid() && it->key().starts_with("pair/"); it->Next()) {
    const int p = std::stoi(it->key().ToString().substr(5, 3));
    sum[p] += std::stol(it->value().ToString());
    ++seen[p];
  }
  it.reset();
  db.ReleaseSnapshot(snap);
  for (int p = 0; p < kPairCount && broken.empty(); ++p)
    if (seen[p] == 1 || (seen[p] == 2 && sum[p] != kPairSum))
      broken =
          fmt::format("pair {}: {} of 2 counters, sum {} (want {})", p, seen[p], sum[p], kPairSum);
  return broken;
}

}  // namespace rocksrepl
