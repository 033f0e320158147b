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

// The digest-only store's table: key hash -> entry hash, open addressing with linear probing
// in one flat array (no node per key, one cache line touched per put in the common case),
// at most half full, grown by doubling. The array is mapped with transparent huge pages when
// the kernel allows it: at a million keys it is 32 MiB, and with 4 KiB pages nearly every
// put would also miss the TLB. A key hash of 0 marks an empty slot, so key hash 0 is stored
// as 1 (such keys share an entry, identically on every node, like any 64-bit collision).
class DigestTable {
 public:
  DigestTable() = default;
  DigestTable(const DigestTable&) = delete;
  DigestTable& operator=(const DigestTable&) = delete;
  ~DigestTable();

  static constexpr uint64_t slot_key(uint64_t key_hash) noexcept {
    return key_hash == 0 ? 1 : key_hash;
  }
  // Hints the cache about the slot `key` probes first (a put soon after does not wait for it).
  void prefetch(uint64_t key) const noexcept {
    if (slots_ != nullptr) __builtin_prefetch(&slots_[key & mask_], 1);
  }
  // Throws std::bad_alloc when the table must grow and no memory is left.
  void put(uint64_t key, uint64_t entry);
  void erase(uint64_t key) noexcept;
  // Room for `keys` entries without growing.
  void reserve(size_t keys);
  // Empties the table (keeps its capacity).
  void clear() noexcept;
  [[nodiscard]] size_t size() const noexcept { return size_; }
  // Sum (mod 2^64) of every entry hash.
  [[nodiscard]] uint64_t sum() const noexcept;

 private:
  struct Slot {
    uint64_t key;  // 0: empty
    uint64_t entry;
  };
  void rehash(size_t capacity);

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t mask_ = 0;
  size_t size_ = 0;
  size_t map_bytes_ = 0;  // of the mapping that holds slots_
  void* map_ = nullptr;
};

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
  // Empties the store (a failover member rebuilt from its log: failover::FailoverStore).
  void clear();
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
  DigestTable hashes_;  // kDigestOnly: key hash -> entry hash
  uint64_t bytes_ = 0;
};

}  // namespace rdmarepl::kvdemo
