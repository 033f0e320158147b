// The receive queue of one TCP connection: the receives this side posted, zero-length
// (post_recvs) or with a buffer (post_recv_buffers), in one queue, in order, as on an RC
// queue pair. An incoming write-with-immediate or Send consumes the oldest, whatever its
// kind (docs/transport.md, "Two-sided messages and RDMA Reads").
//
// Invariant: a receive is in use from its post until its completion is reaped, so posted
// but unconsumed receives plus the receive completions not yet reaped never exceed the
// depth (has_room()); that is what keeps the CompletionRing from overflowing. Slots are
// allocated when the connection is built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "completion_ring.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::tcp {

// A posted receive: zero-length (post_recvs) or with a buffer (post_recv_buffers).
struct RecvSlot {
  uint64_t wr_id = 0;
  uint8_t* addr = nullptr;
  uint32_t length = 0;
};

class RecvQueue {
 public:
  explicit RecvQueue(uint32_t depth) : rq_(depth) {}

  [[nodiscard]] size_t depth() const noexcept { return rq_.size(); }
  // Whether `count` more receives fit: slots stay in use until their completions are reaped.
  [[nodiscard]] bool has_room(size_t count, const CompletionRing& cq) const noexcept {
    return count <= rq_.size() - ((posted_ - consumed_) + cq.recv_pending());
  }
  // Appends a receive (room checked by the caller).
  void post(const RecvSlot& r) noexcept {
    rq_[posted_ % rq_.size()] = r;
    ++posted_;
  }
  // No receive is posted (an incoming write or Send would find none: RNR).
  [[nodiscard]] bool empty() const noexcept { return consumed_ == posted_; }
  // The receive the next incoming write or Send takes (not empty()).
  [[nodiscard]] const RecvSlot& oldest() const noexcept { return rq_[consumed_ % rq_.size()]; }
  // Consumes the oldest receive; its completion is the caller's to push.
  void consume() noexcept { ++consumed_; }

  // The error state: every posted receive completes as flushed.
  void flush(CompletionRing& cq) noexcept {
    for (uint64_t i = consumed_; i < posted_; ++i) {
      const RecvSlot& r = rq_[i % rq_.size()];
      const WcOpcode op = r.addr != nullptr ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
      cq.push(Completion{r.wr_id, 0, 0, op, WcStatus::flushed});
    }
    consumed_ = posted_;
  }

 private:
  std::vector<RecvSlot> rq_;
  uint64_t posted_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace rdmarepl::transport::tcp
