// Byte accounting for a circular buffer whose entries are placed contiguously, in FIFO
// order, never split across the end. It is the arithmetic shared by the leader's view of a
// follower's ring (credits) and the leader's retained window. It holds no memory itself.
//
// An entry that does not fit between the head and the end of the buffer is placed at 0; the
// skipped tail is charged to that entry (`consumed` > `len`), so releasing entries in order
// returns exactly the bytes they took. The newest entry may grow in place (extend()) while
// the bytes after it are free: the leader encodes records into an open batch that way.
#pragma once

#include <cstdint>
#include <optional>

namespace rdmarepl::replication {

class RingSpace {
 public:
  struct Placement {
    uint64_t offset = 0;
    uint64_t consumed = 0;  // len plus any skipped tail; release() takes it back
  };

  RingSpace() = default;
  explicit RingSpace(uint64_t capacity) noexcept : capacity_(capacity) {}

  // Where an entry of `len` bytes would go, without placing it; nullopt when it does not fit.
  [[nodiscard]] std::optional<uint64_t> where(uint64_t len) const noexcept {
    if (len == 0 || len > capacity_) return std::nullopt;
    if (used_ == 0) return 0;  // empty: place() restarts at 0
    if (used_ == capacity_) return std::nullopt;
    if (head_ > tail_) {  // free: [head, capacity) and [0, tail)
      if (head_ + len <= capacity_) return head_;
      if (len <= tail_) return 0;
      return std::nullopt;
    }
    if (head_ + len <= tail_) return head_;  // head < tail: free is [head, tail)
    return std::nullopt;
  }

  // Places an entry. Precondition: where(len) has a value.
  Placement place(uint64_t len) noexcept {
    Placement p;
    if (used_ == 0) head_ = tail_ = 0;
    if (head_ >= tail_ && head_ + len > capacity_) {
      p.offset = 0;
      p.consumed = (capacity_ - head_) + len;
    } else {
      p.offset = head_;
      p.consumed = len;
    }
    head_ = p.offset + len;  // may equal capacity: the next entry then starts at 0
    used_ += p.consumed;
    return p;
  }

  // True when the newest entry can grow by `delta` bytes in place.
  [[nodiscard]] bool can_extend(uint64_t delta) const noexcept {
    if (used_ == 0) return false;
    if (head_ > tail_) return head_ + delta <= capacity_;
    return head_ + delta <= tail_;
  }
  // Grows the newest entry; its `consumed` grows by `delta` too. Precondition: can_extend().
  void extend(uint64_t delta) noexcept {
    head_ += delta;
    used_ += delta;
  }

  // Releases the oldest entry, which took `consumed` bytes.
  void release(uint64_t consumed) noexcept {
    used_ -= consumed;
    tail_ = (tail_ + consumed) % capacity_;
    if (used_ == 0) head_ = tail_ = 0;
  }

  void reset() noexcept { head_ = tail_ = used_ = 0; }

  [[nodiscard]] uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] uint64_t used() const noexcept { return used_; }
  [[nodiscard]] uint64_t head() const noexcept { return head_; }
  [[nodiscard]] uint64_t tail() const noexcept { return tail_; }

 private:
  uint64_t capacity_ = 0;
  uint64_t head_ = 0;  // end of the newest entry, in [0, capacity]
  uint64_t tail_ = 0;  // start of the oldest entry (or of the tail it skipped)
  uint64_t used_ = 0;
};

}  // namespace rdmarepl::replication
