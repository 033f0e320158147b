// The completion queue of one TCP connection: a ring of completions in the order they were
// produced, reaped by poll(). It counts how many of the queued completions belong to the
// send queue (writes, sends, reads) and to the receive queue, because each queue counts a
// request as in use until its completion is reaped.
//
// Invariant: the ring never overflows. Its capacity is at least send + receive depth, and
// SendQueue::in_use() and RecvQueue::has_room() keep the completions that are queued or may
// still be produced within it. It is allocated when the connection is built and only
// resize() (control plane) allocates again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::tcp {

class CompletionRing {
 public:
  explicit CompletionRing(size_t entries) : ring_(entries) {}

  [[nodiscard]] size_t size() const noexcept { return ring_.size(); }
  [[nodiscard]] bool empty() const noexcept { return head_ == tail_; }
  // Completions of the send queue (receive queue) produced but not yet reaped.
  [[nodiscard]] uint64_t send_pending() const noexcept { return send_pending_; }
  [[nodiscard]] uint64_t recv_pending() const noexcept { return recv_pending_; }

  void push(const Completion& c) noexcept {
    // Cannot overflow: SendQueue::in_use() and the receive accounting keep the completions
    // that are queued or may still be produced within size().
    if (is_send_side(c.opcode))
      ++send_pending_;
    else
      ++recv_pending_;
    ring_[tail_ % ring_.size()] = c;
    ++tail_;
  }

  // Moves up to out.size() completions, oldest first, into `out`; returns how many.
  size_t pop(std::span<Completion> out) noexcept {
    size_t n = 0;
    while (n < out.size() && head_ != tail_) {
      const Completion& c = ring_[head_ % ring_.size()];
      ++head_;
      if (is_send_side(c.opcode))
        --send_pending_;
      else
        --recv_pending_;
      out[n++] = c;
    }
    return n;
  }

  // Control plane: resizes the ring to `entries`, keeping the completions queued in it, in
  // order. False when the size does not change.
  bool resize(size_t entries) {
    if (entries == ring_.size()) return false;
    std::vector<Completion> ring(entries);
    for (uint64_t i = head_; i != tail_; ++i) ring[i % entries] = ring_[i % ring_.size()];
    ring_ = std::move(ring);
    return true;
  }

 private:
  std::vector<Completion> ring_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  uint64_t send_pending_ = 0;
  uint64_t recv_pending_ = 0;
};

}  // namespace rdmarepl::transport::tcp
