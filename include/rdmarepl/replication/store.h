// The Store concept: what a key-value store provides so that a ReplicationChannel can drive
// it. Only apply() is required; get() and the snapshot hooks are used by later layers
// (remote reads, checkpoints) and are checked when those layers are used.
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/record.h"

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
};

// Required of every store: apply one replicated record. Called on followers in sequence
// order per shard, exactly once per record. The record's views die when apply returns.
template <class S>
concept Store = requires(S& s, const Record& r) {
  {s.apply(r)};
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
