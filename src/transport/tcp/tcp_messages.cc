// Two-sided messages and RDMA Reads on the TCP transport: posting them, and the responder's
// and requester's handling of their frames (docs/wire_format.md, "TCP transport frames").
#include <fmt/format.h>

#include "tcp_connection.h"

namespace rdmarepl::transport::tcp {

PostStatus TcpConnection::post_sends(std::span<const SendRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  for (const auto& r : requests) {
    WriteRequest w;
    w.local_addr = r.local_addr;
    w.length = r.length;
    w.lkey = r.lkey;
    w.signaled = r.signaled;
    push_slot(Kind::send, r.wr_id, w, nullptr);
  }
  posts_sends_ = true;
  progress_send();
  return PostStatus::ok;
}

PostStatus TcpConnection::post_reads(std::span<const ReadRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  for (const auto& r : requests) {
    WriteRequest w;
    w.local_addr = r.local_addr;
    w.length = r.length;
    w.lkey = r.lkey;
    w.remote_addr = r.remote_addr;
    w.rkey = r.rkey;
    w.signaled = true;
    push_slot(Kind::read, r.wr_id, w, static_cast<uint8_t*>(r.local_addr));
  }
  progress_send();
  return PostStatus::ok;
}

PostStatus TcpConnection::post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept {
  if (!healthy()) return PostStatus::disconnected;
  if (buffers.size() > rq_.size() - ((rq_posted_ - rq_consumed_) + recv_cq_pending_))
    return PostStatus::queue_full;
  for (const auto& b : buffers) {
    if (b.length > 0 && b.addr == nullptr) return PostStatus::invalid;
    if (b.length > 0 && !registry_->check_local(b.lkey, b.addr, b.length))
      return PostStatus::invalid;
  }
  for (const auto& b : buffers) {
    rq_[rq_posted_ % rq_.size()] = RecvSlot{b.wr_id, static_cast<uint8_t*>(b.addr), b.length};
    ++rq_posted_;
  }
  return PostStatus::ok;
}

bool TcpConnection::start_send_frame() noexcept {
  const RecvSlot& r = rq_[rq_consumed_ % rq_.size()];
  if (in_.length > r.length) {
    ++rq_consumed_;
    ++recv_cq_pending_;
    push_completion(Completion{r.wr_id, 0, 0, WcOpcode::recv, WcStatus::local_length_error});
    refuse(NakSyndrome::invalid_request, Errc::protocol_error,
           fmt::format("sent a message of {} bytes (seq {}) but the receive posted here holds "
                       "{} bytes; post receive buffers as large as the largest message",
                       in_.length, in_.seq, r.length));
    return false;
  }
  if (in_.length == 0) {
    finish_frame();
    return true;
  }
  place_ = r.addr;
  in_done_ = 0;
  rstate_ = RecvState::payload;
  return true;
}

bool TcpConnection::start_read_request() noexcept {
  recv_seq_ = in_.seq;
  if (in_.length > 0) {
    std::shared_lock lock(registry_->mutex());
    const Registry::Entry* e = registry_->find_remote_locked(in_.rkey);
    const char* violation = nullptr;
    if (e == nullptr)
      violation = "its rkey is not registered here (forged or stale key)";
    else if (!has(e->access, Access::remote_read))
      violation = "its region is not registered with remote read access";
    else if (!e->covers(static_cast<uintptr_t>(in_.remote_addr), in_.length))
      violation = "the range does not lie wholly inside the region of that rkey";
    if (violation != nullptr) {
      lock.unlock();
      refuse(NakSyndrome::remote_access, Errc::remote_access,
             fmt::format("asked to read {} bytes at 0x{:x} with rkey 0x{:08x} (seq {}): {}; "
                         "nothing was read; re-exchange region descriptors",
                         in_.length, in_.remote_addr, in_.rkey, in_.seq, violation));
      return false;
    }
  }
  if (rsp_tail_ - rsp_head_ >= rsp_.size()) {
    refuse(NakSyndrome::invalid_request, Errc::protocol_error,
           fmt::format("had more than {} reads outstanding (seq {}); the peer is faulty",
                       kMaxReadsInFlight, in_.seq));
    return false;
  }
  ReadResponse& r = rsp_[rsp_tail_ % rsp_.size()];
  r.data = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(in_.remote_addr));
  r.length = in_.length;
  FrameHeader h;
  h.type = FrameType::read_response;
  h.length = in_.length;
  h.seq = in_.seq;
  h.encode(r.header);
  ++rsp_tail_;
  return true;
}

bool TcpConnection::start_read_response() noexcept {
  const uint64_t seq = in_.seq;
  bool ok = seq > sq_retired_ && seq <= sq_sent_ && slot(seq - 1).kind == Kind::read &&
            slot(seq - 1).length == in_.length;
  if (ok) {
    retire_acked(seq - 1);  // as in RC, the response acknowledges every request before it
    ok = sq_retired_ == seq - 1;
  }
  if (!ok) {
    fail(Error(Errc::protocol_error,
               fmt::format("{} sent a read response for seq {} ({} bytes) that answers no "
                           "outstanding read of ours in order; the peer is faulty, reconnect",
                           peer_name_, seq, in_.length)),
         0, WcStatus::flushed);
    return false;
  }
  place_ = slot(seq - 1).read_dst;
  if (in_.length == 0) {
    complete_read();
    return true;
  }
  in_done_ = 0;
  rstate_ = RecvState::payload;
  return true;
}

void TcpConnection::complete_read() noexcept {
  const SendSlot& s = slot(sq_retired_);
  ++send_cq_pending_;
  push_completion(Completion{s.wr_id, 0, s.length, WcOpcode::rdma_read, WcStatus::success});
  ++sq_retired_;
  if (reads_on_wire_ > 0) --reads_on_wire_;
  retire_acked(ack_pending_);
}

}  // namespace rdmarepl::transport::tcp
