// The Store concept: what a key-value store provides so that a ReplicationChannel can drive
// it. Only apply() is required; get() and the snapshot hooks are used by later layers
// (remote reads, checkpoints) and are checked when those layers are used.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/record_group.h"

namespace rdmarepl::replication {

// A sink for a store's checkpoint. The store writes its whole state as opaque chunks; the
// durability layer decides where they go.
class SnapshotWriter {
 public:
  virtual ~SnapshotWriter() = default;
  virtual Status write(const void* data, size_t size) = 0;
};

// The source a store restores its state from: the bytes a SnapshotWriter received, in order.
class SnapshotReader {
 public:
  virtual ~SnapshotReader() = default;
  // Reads up to `size` bytes; returns how many (0 at the end).
  virtual Result<size_t> read(void* data, size_t size) = 0;
  // Per shard, the last seq the checkpoint holds (set by the channel before restore() runs;
  // empty when unknown). A DurableStore records them as its durable position in restore(),
  // in the same atomic write as the restored data.
  [[nodiscard]] std::span<const uint64_t> seqs() const noexcept { return seqs_; }
  void set_seqs(std::span<const uint64_t> seqs) { seqs_.assign(seqs.begin(), seqs.end()); }

 private:
  std::vector<uint64_t> seqs_;
};

// Required of every store: apply one replicated record. Called on followers in sequence
// order per shard, exactly once per record. The record's views die when apply returns.
template <class S>
concept Store = requires(S& s, const Record& r) {
  {s.apply(r)};
};

// Optional: apply a write group (replicate_group() on the leader) all or nothing, e.g. as one
// rocksdb::WriteBatch. Called instead of apply() for each group of two or more records, in
// the same seq order; a reader of the store then never sees part of a group. A store without
// it receives a group's records one by one through apply(), in order: a reader may see part
// of a group while it is applied, and a crash of the follower process part way leaves the
// store with a prefix of the group until the rest is applied again after the restart (from
// the leader, or from the channel's log) - atomic only for readers that wait for the
// channel (applied_seq()) and for stores rebuilt from the log.
template <class S>
concept GroupStore = Store<S> && requires(S& s, const RecordGroup& g) {
  {s.apply_group(g)};
};

// Optional: apply all the records of one replication batch (a run of consecutive seqs of one
// shard, as the leader sealed them: single writes and whole write groups, in order) in one
// atomic write, e.g. one rocksdb::WriteBatch with the shard's position. Called instead of
// apply() and apply_group() for every batch a follower applies (only its records above the
// store's position, after a resend or a checkpoint). A store pays its per-write cost (a
// write-ahead log record, a position update) once per batch instead of once per record;
// readers see a batch whole, which includes every group in it (docs/replication.md,
// "Applying a whole batch").
template <class S>
concept BatchStore = Store<S> && requires(S& s, const RecordGroup& records) {
  {s.apply_batch(records)};
};

// Optional: the store persists its data itself and reports, per shard, the seq of the last
// record it durably applied (0: none), written atomically with that record's data (e.g. in
// the same rocksdb::WriteBatch). A follower then resumes from that point after a restart
// instead of being sent everything again, and a channel with a write-ahead log replays only
// the records after it (docs/replication.md, "Resuming from the store's durable position").
// Called at create() only, before the channel applies anything.
template <class S>
concept DurableStore = Store<S> && requires(S& s, uint32_t shard) {
  { s.durable_seq(shard) } -> std::convertible_to<uint64_t>;
};

// Optional: serve reads (later: remote reads from replicas). Returns true when found.
template <class S>
concept ReadableStore = Store<S> && requires(S& s, std::string_view key, std::string& out) {
  { s.get(key, out) } -> std::convertible_to<bool>;
};

// Optional: checkpoints for the durability layer.
template <class S>
concept SnapshottableStore = Store<S> && requires(S& s, SnapshotWriter& w, SnapshotReader& r) {
  { s.snapshot(w) } -> std::convertible_to<Status>;
  { s.restore(r) } -> std::convertible_to<Status>;
};

}  // namespace rdmarepl::replication
