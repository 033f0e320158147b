// The demo's key-value store: an in-memory hash map that models rdmarepl::Store (apply) and
// ReadableStore (get), with an order-independent digest so that stores filled in different
// orders (leader writes, follower applies, catch-up replays) compare equal when their final
// contents are equal.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rdmarepl/replication/record.h"

namespace rdmarepl::kvdemo {

// The sum (mod 2^64) of a 64-bit hash of every (key, value) entry, plus the entry count.
// A sum is order independent and, unlike XOR, does not cancel two equal entries.
struct Digest {
  uint64_t sum = 0;
  uint64_t entries = 0;
  friend bool operator==(const Digest&, const Digest&) = default;
  // "3f2a...e1/999000": 16 hex digits, a slash, the entry count.
  [[nodiscard]] std::string to_string() const;
  static bool parse(std::string_view text, Digest& out);
};

// The hash of one entry; a change to either the key or the value changes it.
uint64_t entry_hash(std::string_view key, std::string_view value) noexcept;

// Thread-safe: apply() runs on the channel's poller thread while the control thread may ask
// for a digest. The lock is uncontended in steady state.
class KvStore {
 public:
  // kFull keeps every value (a real store). kDigestOnly keeps, per key, only the hash of its
  // entry, in a table indexed by a 64-bit hash of the key: the same digest (two keys whose
  // 64-bit hashes collide would share an entry, identically on every node), with neither the
  // values nor the keys held, so that a benchmark measures the replication rather than the
  // allocator of a demo store (get() then finds nothing).
  enum class Mode { kFull, kDigestOnly };
  explicit KvStore(Mode mode = Mode::kFull) : mode_(mode) {}

  void put(std::string_view key, std::string_view value);
  void erase(std::string_view key);
  void apply(const replication::Record& record) {
    if (record.op == replication::Op::put) {
      put(record.key, record.value);
    } else {
      erase(record.key);
    }
  }
  bool get(std::string_view key, std::string& out) const;
  // Sizes the table for `keys` distinct keys up front (no rehash while it fills).
  void reserve(size_t keys);
  [[nodiscard]] size_t size() const;
  // Walks every entry; O(n) and takes the lock for the walk.
  [[nodiscard]] Digest digest() const;
  // Payload bytes held (keys + values).
  [[nodiscard]] uint64_t bytes() const;

 private:
  Mode mode_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> map_;
  std::unordered_map<uint64_t, uint64_t> hashes_;  // kDigestOnly: key hash -> entry hash
  uint64_t bytes_ = 0;
};

}  // namespace rdmarepl::kvdemo
