// Data-path half of VerbsConnection for two-sided messages (IBV_WR_SEND into posted receive
// buffers) and RDMA Reads (IBV_WR_RDMA_READ). Like connection_datapath.cc: nothing here
// allocates, throws or logs.
#include <algorithm>
#include <cerrno>
#include <iterator>

#include "transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {

ibv_send_wr& VerbsConnection::prepare_wr(size_t i, uint64_t wr_id, uint32_t length, WcOpcode op,
                                         bool report, uint32_t& run) noexcept {
  const uint64_t seq = sq_tail_ + i;
  SendSlot& slot = slots_[seq % sq_depth_];
  slot.wr_id = wr_id;
  slot.length = length;
  slot.op = op;
  slot.report = report;
  // Selective signaling as for writes: at least every unsignaled_batch_ requests.
  const bool signaled = report || run + 1 >= unsignaled_batch_;
  run = signaled ? 0 : run + 1;
  ibv_send_wr& wr = send_wrs_[i];
  wr = ibv_send_wr{};
  wr.wr_id = seq;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  return wr;
}

PostStatus VerbsConnection::post_sends(std::span<const SendRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  const size_t n = requests.size();
  uint32_t run = unsignaled_run_;
  for (size_t i = 0; i < n; ++i) {
    const SendRequest& r = requests[i];
    ibv_send_wr& wr = prepare_wr(i, r.wr_id, r.length, WcOpcode::send, r.signaled, run);
    wr.opcode = IBV_WR_SEND;
    if (r.length > 0) {
      ibv_sge* sge = &send_sges_[i * kMaxWriteSegments];
      *sge = ibv_sge{reinterpret_cast<uint64_t>(r.local_addr), r.length, r.lkey};
      wr.sg_list = sge;
      wr.num_sge = 1;
      if (r.length <= max_inline_) wr.send_flags |= IBV_SEND_INLINE;
    }
    wr.next = i + 1 < n ? &send_wrs_[i + 1] : nullptr;
  }
  return submit_send_chain(n, run);
}

PostStatus VerbsConnection::post_reads(std::span<const ReadRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  const size_t n = requests.size();
  uint32_t run = unsignaled_run_;
  for (size_t i = 0; i < n; ++i) {
    const ReadRequest& r = requests[i];
    ibv_send_wr& wr = prepare_wr(i, r.wr_id, r.length, WcOpcode::rdma_read, true, run);
    wr.opcode = IBV_WR_RDMA_READ;
    wr.wr.rdma.remote_addr = r.remote_addr;
    wr.wr.rdma.rkey = r.rkey;
    if (r.length > 0) {
      ibv_sge* sge = &send_sges_[i * kMaxWriteSegments];
      *sge = ibv_sge{reinterpret_cast<uint64_t>(r.local_addr), r.length, r.lkey};
      wr.sg_list = sge;
      wr.num_sge = 1;
    }
    wr.next = i + 1 < n ? &send_wrs_[i + 1] : nullptr;
  }
  return submit_send_chain(n, run);
}

PostStatus VerbsConnection::post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept {
  if (buffers.empty()) return PostStatus::ok;
  if (failed_.load(std::memory_order_relaxed)) return PostStatus::disconnected;
  if (state_->srq || auto_recv_) return PostStatus::invalid;
  if (rq_posted_ + buffers.size() > rq_depth_ || buffers.size() > recv_wrs_.size())
    return PostStatus::queue_full;
  ibv_sge sges[64];
  size_t done = 0;
  while (done < buffers.size()) {
    const size_t chunk = std::min<size_t>(buffers.size() - done, std::size(sges));
    for (size_t i = 0; i < chunk; ++i) {
      const RecvBuffer& b = buffers[done + i];
      if (b.length > 0 && b.addr == nullptr) return PostStatus::invalid;
      ibv_recv_wr& wr = recv_wrs_[i];
      wr = ibv_recv_wr{};
      wr.wr_id = b.wr_id;
      if (b.length > 0) {
        sges[i] = ibv_sge{reinterpret_cast<uint64_t>(b.addr), b.length, b.lkey};
        wr.sg_list = &sges[i];
        wr.num_sge = 1;
      }
      wr.next = i + 1 < chunk ? &recv_wrs_[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    const int rc = ibv_post_recv(qp_.get(), recv_wrs_.data(), &bad);
    if (rc != 0) {
      const auto posted = bad == nullptr ? 0u : static_cast<uint32_t>(bad - recv_wrs_.data());
      rq_posted_ += posted;
      return rc == ENOMEM ? PostStatus::queue_full : PostStatus::invalid;
    }
    rq_posted_ += static_cast<uint32_t>(chunk);
    done += chunk;
  }
  return PostStatus::ok;
}

}  // namespace rdmarepl::transport::verbs
