// Data-path half of VerbsConnection: posting and reaping. Nothing here allocates, throws or
// logs; failures are recorded in plain fields and explained later by error().
#include <arpa/inet.h>

#include <algorithm>

#include "rdmarepl/core/clock.h"
#include "transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {
namespace {

// How often an idle poll() looks at the peer's socket and the QP state (two system calls).
constexpr uint64_t kLivenessIntervalNs = 1'000'000;
// Completions reaped per ibv_poll_cq call (an on-stack array).
constexpr int kPollChunk = 32;

}  // namespace

PostStatus VerbsConnection::post_writes(std::span<const WriteRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  const size_t n = requests.size();
  uint32_t run = unsignaled_run_;
  for (size_t i = 0; i < n; ++i) {
    const WriteRequest& r = requests[i];
    const uint64_t seq = sq_tail_ + i;
    SendSlot& slot = slots_[seq % sq_depth_];
    slot.wr_id = r.wr_id;
    slot.op = WcOpcode::rdma_write;
    const auto total = static_cast<uint32_t>(r.total_length());
    slot.length = total;
    slot.report = r.signaled;
    // Selective signaling: force a signaled request at least every unsignaled_batch_, so
    // the send queue's slots are released (a signaled completion retires all before it).
    bool signaled = r.signaled || run + 1 >= unsignaled_batch_;
    run = signaled ? 0 : run + 1;

    ibv_send_wr& wr = send_wrs_[i];
    ibv_sge* sges = &send_sges_[i * kMaxWriteSegments];
    wr = ibv_send_wr{};
    wr.wr_id = seq;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(r.imm);  // the immediate travels in network byte order
    wr.wr.rdma.remote_addr = r.remote_addr;
    wr.wr.rdma.rkey = r.rkey;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    int num_sge = 0;
    for (size_t k = 0; k < r.segment_count(); ++k) {
      LocalSegment g = r.segment(k);
      if (g.length == 0) continue;  // an empty SGE adds nothing
      sges[num_sge++] = ibv_sge{reinterpret_cast<uint64_t>(g.addr), g.length, g.lkey};
    }
    if (num_sge > 0) {
      wr.sg_list = sges;
      wr.num_sge = num_sge;
      if (total <= max_inline_) wr.send_flags |= IBV_SEND_INLINE;
    }
    wr.next = i + 1 < n ? &send_wrs_[i + 1] : nullptr;
  }
  return submit_send_chain(n, run);
}

PostStatus VerbsConnection::submit_send_chain(size_t n, uint32_t run) noexcept {
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp_.get(), send_wrs_.data(), &bad);
  if (rc != 0) {
    const size_t posted = bad == nullptr ? 0 : static_cast<size_t>(bad - send_wrs_.data());
    if (posted == 0) return rc == ENOMEM ? PostStatus::queue_full : PostStatus::invalid;
    // Part of the chain is on the wire: the all-or-nothing promise cannot be kept, so the
    // connection fails and the posted part completes as flushed.
    sq_tail_ += posted;
    fail(Failure::post_failed, WcStatus::fatal, rc);
    return PostStatus::disconnected;
  }
  sq_tail_ += n;
  unsignaled_run_ = run;
  return PostStatus::ok;
}

PostStatus VerbsConnection::post_recvs(uint32_t count, uint64_t first_wr_id) noexcept {
  if (count == 0) return PostStatus::ok;
  if (failed_.load(std::memory_order_relaxed)) return PostStatus::disconnected;
  return post_recv_chain(count, first_wr_id);
}

PostStatus VerbsConnection::post_recv_chain(uint32_t count, uint64_t first_wr_id) noexcept {
  if (!state_->srq && rq_posted_ + count > rq_depth_) return PostStatus::queue_full;
  uint32_t done = 0;
  while (done < count) {
    const uint32_t chunk =
        std::min<uint32_t>(count - done, static_cast<uint32_t>(recv_wrs_.size()));
    for (uint32_t i = 0; i < chunk; ++i) {
      ibv_recv_wr& wr = recv_wrs_[i];
      wr = ibv_recv_wr{};
      wr.wr_id = first_wr_id + done + i;
      wr.sg_list = nullptr;  // zero-length: a write-with-imm consumes it without data
      wr.num_sge = 0;
      wr.next = i + 1 < chunk ? &recv_wrs_[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    int rc = state_->srq ? ibv_post_srq_recv(state_->srq.get(), recv_wrs_.data(), &bad)
                         : ibv_post_recv(qp_.get(), recv_wrs_.data(), &bad);
    if (rc != 0) {
      const uint32_t posted = bad == nullptr ? 0 : static_cast<uint32_t>(bad - recv_wrs_.data());
      rq_posted_ += posted;
      return rc == ENOMEM ? PostStatus::queue_full : PostStatus::invalid;
    }
    rq_posted_ += chunk;
    done += chunk;
  }
  return PostStatus::ok;
}

size_t VerbsConnection::poll(std::span<Completion> out) noexcept {
  size_t n = 0;
  while (n < out.size() && stash_begin_ != stash_end_) out[n++] = stash_[stash_begin_++];
  if (n < out.size()) n += reap_send(out.subspan(n));
  if (n < out.size()) n += reap_recv(out.subspan(n));
  if (auto_recv_ && consumed_auto_ >= replenish_batch_) replenish();
  if (n == 0 && !failed_.load(std::memory_order_relaxed)) {
    const uint64_t now = mono_ns();
    if (now >= next_liveness_check_ns_) {
      next_liveness_check_ns_ = now + kLivenessIntervalNs;
      check_liveness();
    }
  }
  return n;
}

size_t VerbsConnection::reap_send(std::span<Completion> out) noexcept {
  size_t n = 0;
  ibv_wc wc[kPollChunk];
  while (n < out.size()) {
    const int want = static_cast<int>(std::min<size_t>(kPollChunk, out.size() - n));
    const int got = ibv_poll_cq(send_cq_.get(), want, wc);
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      const uint64_t seq = wc[i].wr_id;
      const SendSlot& slot = slots_[seq % sq_depth_];
      sq_head_ = seq + 1;
      const WcStatus status = to_wc_status(wc[i].status);
      if (status != WcStatus::success && status != WcStatus::flushed) {
        fail(Failure::completion, status, wc[i].status, wc[i].vendor_err, slot.wr_id);
      } else if (status == WcStatus::flushed) {
        fail(Failure::qp_error);
      }
      // Successful completions of requests the caller left unsignaled are not reported;
      // failed ones always are (every pending request completes).
      if (!slot.report && status == WcStatus::success) continue;
      out[n++] = Completion{slot.wr_id, 0, slot.length, slot.op, status};
    }
  }
  return n;
}

size_t VerbsConnection::reap_recv(std::span<Completion> out) noexcept {
  size_t n = 0;
  ibv_wc wc[kPollChunk];
  while (n < out.size()) {
    const int want = static_cast<int>(std::min<size_t>(kPollChunk, out.size() - n));
    const int got = ibv_poll_cq(recv_cq_.get(), want, wc);
    if (got <= 0) break;
    for (int i = 0; i < got; ++i) {
      if (rq_posted_ > 0) --rq_posted_;
      const WcStatus status = to_wc_status(wc[i].status);
      if (status != WcStatus::success && status != WcStatus::flushed) {
        fail(Failure::completion, status, wc[i].status, wc[i].vendor_err, wc[i].wr_id);
      } else if (status == WcStatus::flushed) {
        fail(Failure::qp_error);
      } else if (auto_recv_) {
        ++consumed_auto_;
      }
      const uint32_t imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0 ? ntohl(wc[i].imm_data) : 0;
      // A Send's receive: IBV_WC_RECV (the opcode is only valid on success).
      const WcOpcode op = status == WcStatus::success && wc[i].opcode == IBV_WC_RECV
                              ? WcOpcode::recv
                              : WcOpcode::recv_rdma_with_imm;
      out[n++] = Completion{wc[i].wr_id, imm, wc[i].byte_len, op, status};
    }
  }
  return n;
}

void VerbsConnection::replenish() noexcept {
  if (failed_.load(std::memory_order_relaxed)) return;
  const uint32_t count = consumed_auto_;
  if (post_recv_chain(count, auto_wr_id_) == PostStatus::ok) {
    auto_wr_id_ += count;
    consumed_auto_ = 0;
  }
}

}  // namespace rdmarepl::transport::verbs
