// RocksDbStore: an existing store, RocksDB, embedding rdmarepl through the public API alone.
// It models every optional hook of the Store concept:
//   apply(record)        one rocksdb::WriteBatch: the put or delete, and the shard's position
//   apply_group(group)   one rocksdb::WriteBatch for the whole group (all or nothing)
//   apply_batch(records) one rocksdb::WriteBatch per replication batch, used on followers
//                        instead of the two above: RocksDB's per-write cost once per batch
//   durable_seq(shard)   the position written with the data, read back at open()
//   get(key, out)        a point read
//   snapshot / restore   a full copy through a RocksDB snapshot iterator
// Beside the user's keys the database holds, per shard, two metadata keys under the prefix
// "\0rdmarepl/": the last seq applied and the number of records applied (written in the same
// batch as the data; equal when every record was applied exactly once).
#pragma once

#include <rocksdb/db.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/rdmarepl.h"

namespace rocksrepl {

class RocksDbStore {
 public:
  // Opens (creating) the database at `path` for a channel of `shards` shards.
  static rdmarepl::Result<std::unique_ptr<RocksDbStore>> open(const std::string& path,
                                                              uint32_t shards);
  RocksDbStore(const RocksDbStore&) = delete;
  RocksDbStore& operator=(const RocksDbStore&) = delete;

  // Store hooks (called by the channel).
  void apply(const rdmarepl::Record& r);
  void apply_group(const rdmarepl::RecordGroup& g);
  // A whole replication batch (its single writes and groups) in one WriteBatch.
  void apply_batch(const rdmarepl::RecordGroup& records);
  [[nodiscard]] uint64_t durable_seq(uint32_t shard) const;
  bool get(std::string_view key, std::string& out);
  rdmarepl::Status snapshot(rdmarepl::SnapshotWriter& out);
  rdmarepl::Status restore(rdmarepl::SnapshotReader& in);

  // Leader: applies a write the channel committed (ticket of the last op) to the local
  // database, with its position, as a follower would.
  void apply_committed(std::span<const rdmarepl::GroupOp> ops, rdmarepl::Ticket ticket);

  // Hook for the exactly-once test: after the database write that reaches `seq` (any shard),
  // before returning to the channel (so before the acknowledgement), the process kills
  // itself with SIGKILL.
  void crash_after(uint64_t seq) { crash_after_ = seq; }

  [[nodiscard]] rocksdb::DB& db() { return *db_; }
  [[nodiscard]] static bool is_meta(std::string_view key) {
    return key.starts_with(std::string_view("\0rdmarepl/", 10));
  }
  // Per shard, the records applied (the counter key); equal to durable_seq() when each
  // record was applied exactly once.
  [[nodiscard]] uint64_t applied_count(uint32_t shard) const;

  // Fatal RocksDB errors: the store cannot go on (the channel's hooks return nothing).
  [[noreturn]] static void die(const rocksdb::Status& st, std::string_view what);

 private:
  RocksDbStore(std::unique_ptr<rocksdb::DB> db, uint32_t shards);
  void add_op(rocksdb::WriteBatch& wb, rdmarepl::Op op, std::string_view key,
              std::string_view value);
  // Adds the shard's position `seq` and `n` more applied records to `wb`, writes it.
  void commit(rocksdb::WriteBatch& wb, uint32_t shard, uint64_t seq, uint64_t n);

  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions wo_;  // WAL on, no sync: what the benchmark compares against
  std::vector<std::atomic<uint64_t>> position_;
  std::vector<uint64_t> applied_;  // per shard; written only by the shard's applier
  uint64_t crash_after_ = 0;
};

// The metadata key of `shard`: "pos" (last seq) or "count" (records applied).
std::string meta_key(std::string_view what, uint32_t shard);

}  // namespace rocksrepl
