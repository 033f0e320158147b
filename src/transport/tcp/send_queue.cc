// The send queue's answers to the peer's NAKs and read responses, and its flush into the
// error state (the hot paths, posting and acknowledgements, are inline in send_queue.h).
#include "send_queue.h"

namespace rdmarepl::transport::tcp {

uint64_t SendQueue::accept_nak(uint64_t seq, CompletionRing& cq) noexcept {
  // As in RC, a NAK acknowledges every write before the one it names.
  if (seq > retired_ + 1 && seq - 1 <= sent_) retire_acked(seq - 1, cq);
  return seq > retired_ && seq <= posted_ ? slot(seq - 1).wr_id : 0;
}

bool SendQueue::accept_read_response(uint64_t seq, uint32_t length, CompletionRing& cq) noexcept {
  bool ok = seq > retired_ && seq <= sent_ && slot(seq - 1).kind == SendKind::read &&
            slot(seq - 1).length == length;
  if (ok) {
    retire_acked(seq - 1, cq);  // as in RC, the response acknowledges every request before it
    ok = retired_ == seq - 1;
  }
  return ok;
}

void SendQueue::flush(uint64_t failed_seq, WcStatus status, CompletionRing& cq) noexcept {
  for (uint64_t i = retired_; i < posted_; ++i) {
    const SendSlot& s = slot(i);
    const WcOpcode op = s.kind == SendKind::write  ? WcOpcode::rdma_write
                        : s.kind == SendKind::send ? WcOpcode::send
                                                   : WcOpcode::rdma_read;
    cq.push(Completion{s.wr_id, 0, 0, op, i + 1 == failed_seq ? status : WcStatus::flushed});
  }
  retired_ = sent_ = posted_;
  offset_ = 0;
  reads_on_wire_ = 0;
}

}  // namespace rdmarepl::transport::tcp
