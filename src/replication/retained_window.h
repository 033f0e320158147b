// The retained window of one leader shard: the registered buffer its batches are encoded
// into and sent from, kept until no connected follower needs them, and their descriptors,
// circular by batch number. The caller holds the shard's lock. See docs/replication.md,
// "The data path on the leader".
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rdmarepl/memory/registration_cache.h"
#include "rdmarepl/memory/slab_pool.h"
#include "registered_buffer.h"
#include "ring_space.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

// What the window holds for a gathered batch until it is evicted: the pool Buffer of a
// replicate(key, Buffer), or the Pin on the store region a plain replicate() value lies in.
struct HeldValue {
  memory::Buffer buffer;
  memory::RegistrationCache::Pin pin;
  [[nodiscard]] bool holds() const noexcept { return buffer || pin; }
};

struct BatchDesc {
  uint64_t offset = 0;    // in the window
  uint64_t len = 0;       // padded batch size
  uint64_t consumed = 0;  // window bytes, skipped tail included
  uint64_t first_seq = 0;
  uint32_t count = 0;
  bool large = false;
  uint64_t t0_ns = 0;  // when its first record was accepted
  uint64_t lsn = 0;    // its write-ahead log ticket (0 without a log or when recovered)
  // A gathered batch (replicate(key, Buffer), or a value in a registered store region):
  // only its first `head` bytes (batch header, record header, key) are in the window; the
  // `value_len` value bytes follow from `value` (the pool Buffer or the store region, held
  // by the window until eviction), then zero padding up to `len`. 0 for an ordinary batch,
  // wholly in the window.
  uint32_t head = 0;
  uint32_t value_len = 0;
  uint32_t value_lkey = 0;
  const std::byte* value = nullptr;
  uint64_t end_bytes = 0;  // `len` of every batch pushed so far, this one included (push())
  DigestCache digest;      // with a pre-shared key, once it was first sent (Carrier::post())
  [[nodiscard]] uint64_t last_seq() const noexcept { return first_seq + count - 1; }
};

class RetainedWindow {
 public:
  enum class Room : uint8_t { ok, evicted, stalled };

  RetainedWindow() = default;
  // `max_batches` descriptors: the window evicts by count as well as by bytes.
  RetainedWindow(RegisteredBuffer buffer, size_t max_batches)
      : buffer_(std::move(buffer)),
        space_(buffer_.size()),
        descs_(max_batches),
        values_(max_batches) {}

  [[nodiscard]] BatchDesc& desc(uint64_t bn) noexcept { return descs_[bn % descs_.size()]; }
  [[nodiscard]] const BatchDesc& desc(uint64_t bn) const noexcept {
    return descs_[bn % descs_.size()];
  }
  [[nodiscard]] uint64_t first_bn() const noexcept { return first_bn_; }  // oldest retained
  [[nodiscard]] uint64_t end_bn() const noexcept { return end_bn_; }      // next to seal
  [[nodiscard]] std::byte* data() const noexcept { return buffer_.data(); }
  [[nodiscard]] size_t size() const noexcept { return buffer_.size(); }
  [[nodiscard]] uint32_t lkey() const noexcept { return buffer_.lkey(); }
  // The byte accounting; the open batch grows in place through it.
  [[nodiscard]] RingSpace& space() noexcept { return space_; }

  // Appends the descriptor of a batch sealed (or recovered) at the newest placement.
  void push(const BatchDesc& d) noexcept {
    BatchDesc& slot = desc(end_bn_);
    slot = d;
    pushed_bytes_ += d.len;
    slot.end_bytes = pushed_bytes_;
    ++end_bn_;
  }

  // Keeps the value of the newest batch (a gathered one) until it is evicted.
  void hold_newest(HeldValue&& value) noexcept {
    values_[(end_bn_ - 1) % values_.size()] = std::move(value);
    ++held_;
  }
  // Gathered batches in the window, whose Buffers or region Pins it holds.
  [[nodiscard]] size_t held_buffers() const noexcept { return held_; }

  // Evicts the oldest batch when `evictable(desc)` allows it.
  template <class Evictable>
  bool evict_oldest(Evictable&& evictable) noexcept {
    if (first_bn_ == end_bn_) return false;
    const BatchDesc& d = desc(first_bn_);
    if (!evictable(d)) return false;
    space_.release(d.consumed);
    if (HeldValue& v = values_[first_bn_ % values_.size()]; v.holds()) {
      v.buffer.reset();  // a pool Buffer goes back to the pool
      v.pin.reset();     // a store region may be released again
      --held_;
    }
    ++first_bn_;
    return true;
  }

  // Makes `len` contiguous bytes placeable (and a descriptor slot free) with at most `limit`
  // bytes in use, evicting the oldest batches that `evictable` allows. An empty window always
  // takes the entry, so a limit can never block a shard for good.
  template <class Evictable>
  Room make_room(uint64_t len, uint64_t limit, Evictable&& evictable) noexcept {
    bool evicted = false;
    for (;;) {
      const bool slot = end_bn_ - first_bn_ < descs_.size();
      const bool within = space_.used() == 0 || space_.used() + len <= limit;
      if (slot && space_.where(len) && within) return evicted ? Room::evicted : Room::ok;
      if (!evict_oldest(evictable)) return Room::stalled;
      evicted = true;
    }
  }

  // Lets the newest entry (the open batch) grow by `delta` in place by evicting the oldest
  // batches, when they are what stands right after it. Without this the open batch could
  // only grow into the space a make_room() had freed for it, so once the window had wrapped
  // every batch was sealed at about the size of the batch it replaced, and batches sealed
  // small (by the flush delay at start-up) stayed small for the rest of the run.
  template <class Evictable>
  bool extend_room(uint64_t delta, Evictable&& evictable) noexcept {
    while (!space_.can_extend(delta)) {
      // Free space after the newest entry reaches the end of the window: evicting frees
      // space at its start, which does not help; the batch is sealed and the next one wraps.
      if (space_.head() > space_.tail()) return false;
      if (!evict_oldest(evictable)) return false;
    }
    return true;
  }

  // The padded bytes of the retained batches that hold a record after `seq`: what a
  // follower that acknowledged `seq` still lacks, as far as the window knows.
  [[nodiscard]] uint64_t bytes_after(uint64_t seq) const noexcept {
    uint64_t lo = first_bn_;
    uint64_t hi = end_bn_;
    while (lo < hi) {  // the first batch whose last seq is past `seq`
      const uint64_t mid = lo + (hi - lo) / 2;
      if (desc(mid).last_seq() <= seq) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == end_bn_) return 0;
    return pushed_bytes_ - (desc(lo).end_bytes - desc(lo).len);
  }

  // The first retained batch with a record after `resume` (end_bn() when there is none).
  [[nodiscard]] uint64_t first_after(uint64_t resume) const noexcept {
    uint64_t bn = first_bn_;
    while (bn < end_bn_ && desc(bn).last_seq() <= resume) ++bn;
    return bn;
  }
  // Whether batch `bn` (from first_after(resume)) holds the seq right after `resume`.
  [[nodiscard]] bool holds_next(uint64_t bn, uint64_t resume) const noexcept {
    return bn < end_bn_ && desc(bn).first_seq <= resume + 1;
  }
  // first_after(resume) when the window holds the seq right after `resume`; nullopt when it
  // no longer reaches back that far (or holds nothing after it).
  [[nodiscard]] std::optional<uint64_t> find_after(uint64_t resume) const noexcept {
    const uint64_t bn = first_after(resume);
    if (!holds_next(bn, resume)) return std::nullopt;
    return bn;
  }

  // The first seq the window holds; `otherwise` when it holds none.
  [[nodiscard]] uint64_t first_seq(uint64_t otherwise) const noexcept {
    return first_bn_ < end_bn_ ? desc(first_bn_).first_seq : otherwise;
  }

 private:
  RegisteredBuffer buffer_;
  RingSpace space_;
  std::vector<BatchDesc> descs_;
  std::vector<HeldValue> values_;  // parallel to descs_: gathered batches' values
  size_t held_ = 0;
  uint64_t first_bn_ = 0;
  uint64_t end_bn_ = 0;
  uint64_t pushed_bytes_ = 0;  // `len` of every batch pushed, for bytes_after()
};

}  // namespace rdmarepl::replication::detail
