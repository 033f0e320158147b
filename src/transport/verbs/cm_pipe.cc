#include "cm_pipe.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace rdmarepl::transport::verbs {
namespace {

// The longest sleep between looks at the CQs (a completion raises an event sooner).
constexpr int kMaxSleepMs = 100;

}  // namespace

Result<std::unique_ptr<CmPipe>> CmPipe::create(const Queues& q, std::string name) {
  std::unique_ptr<CmPipe> p(new CmPipe(q, std::move(name)));
  p->rx_.assign(kCmLandingBytes, 0);
  p->tx_.assign(kCmLandingBytes, 0);
  p->rx_mr_.reset(ibv_reg_mr(q.pd, p->rx_.data(), p->rx_.size(),
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  if (!p->rx_mr_) {
    return errno_error(errno, fmt::format("{}: registering the {}-byte handshake landing buffer",
                                          p->name_, p->rx_.size()));
  }
  p->tx_mr_.reset(ibv_reg_mr(q.pd, p->tx_.data(), p->tx_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!p->tx_mr_) {
    return errno_error(errno, fmt::format("{}: registering the {}-byte handshake staging buffer",
                                          p->name_, p->tx_.size()));
  }
  // Zero-length receives, posted before the data path's so that the peer's handshake writes
  // consume these and nothing else (a receive queue is FIFO).
  std::array<ibv_recv_wr, kCmHandshakeWrites> wrs{};
  for (uint32_t i = 0; i < kCmHandshakeWrites; ++i)
    wrs[i].next = i + 1 < kCmHandshakeWrites ? &wrs[i + 1] : nullptr;
  ibv_recv_wr* bad = nullptr;
  const int rc = q.srq != nullptr ? ibv_post_srq_recv(q.srq, wrs.data(), &bad)
                                  : ibv_post_recv(q.qp, wrs.data(), &bad);
  if (rc != 0) {
    return errno_error(rc, fmt::format("{}: posting the {} handshake receives (the shared "
                                       "receive queue may be full: raise srq_depth)",
                                       p->name_, kCmHandshakeWrites));
  }
  return p;
}

RemoteRegion CmPipe::landing() const noexcept {
  return RemoteRegion{reinterpret_cast<uint64_t>(rx_.data()), static_cast<uint32_t>(rx_.size()),
                      rx_mr_->rkey};
}

Status CmPipe::send(std::span<const uint8_t> bytes, Deadline deadline) {
  if (writes_sent_ + 1 >= kCmHandshakeWrites) {
    return Error(Errc::protocol_error, fmt::format("{}: the handshake needs more than {} writes",
                                                   name_, kCmHandshakeWrites - 1));
  }
  if (bytes.size() > tx_.size() - tx_offset_ || tx_offset_ + bytes.size() > peer_landing_.length) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: a {}-byte handshake message does not fit the peer's landing "
                             "buffer ({} of {} bytes used)",
                             name_, bytes.size(), tx_offset_, peer_landing_.length));
  }
  std::memcpy(tx_.data() + tx_offset_, bytes.data(), bytes.size());
  RDMAREPL_TRY(write(tx_offset_, static_cast<uint32_t>(bytes.size()), deadline));
  tx_offset_ += bytes.size();
  return {};
}

Status CmPipe::write(size_t offset, uint32_t length, Deadline deadline) {
  ibv_sge sge{reinterpret_cast<uint64_t>(tx_.data() + offset), length, tx_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = writes_sent_;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(length);
  wr.wr.rdma.remote_addr = peer_landing_.addr + offset;
  wr.wr.rdma.rkey = peer_landing_.rkey;
  wr.sg_list = length > 0 ? &sge : nullptr;
  wr.num_sge = length > 0 ? 1 : 0;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(q_.qp, &wr, &bad); rc != 0)
    return errno_error(rc, name_ + ": posting a handshake write");
  ++writes_sent_;
  // Waiting for each completion keeps one request outstanding and the staging bytes stable.
  ibv_wc wc{};
  RDMAREPL_TRY(next_completion(q_.send_cq, wc, deadline, "the completion of a handshake write"));
  if (wc.status != IBV_WC_SUCCESS) {
    return Error(Errc::connection_closed,
                 fmt::format("{}: a handshake write failed ({}); the peer went away or refused "
                             "the write",
                             name_, ibv_wc_status_str(wc.status)));
  }
  return {};
}

Status CmPipe::recv_exact(std::span<uint8_t> out, Deadline deadline) {
  while (rx_available_ - rx_read_ < out.size()) {
    if (writes_received_ == kCmHandshakeWrites) {
      return Error(Errc::protocol_error,
                   fmt::format("{}: the peer ended its handshake writes with {} bytes unsent "
                               "of a message",
                               name_, out.size() - (rx_available_ - rx_read_)));
    }
    RDMAREPL_TRY(receive_one(deadline));
  }
  std::memcpy(out.data(), rx_.data() + rx_read_, out.size());
  rx_read_ += out.size();
  return {};
}

Status CmPipe::receive_one(Deadline deadline) {
  ibv_wc wc{};
  RDMAREPL_TRY(next_completion(q_.recv_cq, wc, deadline, "the peer's handshake"));
  ++writes_received_;
  if (wc.status != IBV_WC_SUCCESS) {
    return Error(Errc::connection_closed,
                 fmt::format("{}: the connection failed during the handshake ({})", name_,
                             ibv_wc_status_str(wc.status)));
  }
  const uint32_t n = (wc.wc_flags & IBV_WC_WITH_IMM) != 0 ? ntohl(wc.imm_data) : 0;
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || n > rx_.size() - rx_available_) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: a handshake write announces {} bytes at offset {} of the "
                             "{}-byte landing buffer (opcode {}); the peer is not an rdmarepl "
                             "node in RDMA CM mode",
                             name_, n, rx_available_, rx_.size(), static_cast<int>(wc.opcode)));
  }
  rx_available_ += n;
  return {};
}

Status CmPipe::finish(Deadline deadline) {
  while (writes_sent_ < kCmHandshakeWrites) RDMAREPL_TRY(write(tx_offset_, 0, deadline));
  while (writes_received_ < kCmHandshakeWrites) RDMAREPL_TRY(receive_one(deadline));
  if (rx_read_ != rx_available_) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: {} bytes follow the peer's last handshake message", name_,
                             rx_available_ - rx_read_));
  }
  return {};
}

Status CmPipe::next_completion(ibv_cq* cq, ibv_wc& wc, Deadline deadline, const char* what) {
  for (;;) {
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n == 0) {
      // Arm, then look again: a completion that arrived before arming raises no event.
      if (ibv_req_notify_cq(cq, 0) != 0) return errno_error(errno, name_ + ": ibv_req_notify_cq");
      n = ibv_poll_cq(cq, 1, &wc);
    }
    if (n < 0) return Error(Errc::io_error, name_ + ": ibv_poll_cq failed");
    if (n > 0) return {};
    if (Status gone = check_cm_events(); !gone) {
      // The peer's last write (a Reject saying why it refused us) completes before it
      // disconnects, but both may arrive between our poll and reading the event: look once
      // more, so that its reason wins over "disconnected".
      if (ibv_poll_cq(cq, 1, &wc) > 0) return {};
      return gone;
    }
    if (deadline.expired())
      return Error(Errc::timeout, fmt::format("{}: waiting for {} timed out", name_, what));
    pollfd fds[2] = {{q_.channel->fd, POLLIN, 0}, {q_.cm->fd, POLLIN, 0}};
    int ms = deadline.poll_timeout_ms();
    if (ms < 0 || ms > kMaxSleepMs) ms = kMaxSleepMs;
    if (::poll(fds, 2, ms) > 0 && (fds[0].revents & POLLIN) != 0) {
      ibv_cq* ev_cq = nullptr;
      void* ctx = nullptr;
      if (ibv_get_cq_event(q_.channel, &ev_cq, &ctx) == 0) ibv_ack_cq_events(ev_cq, 1);
    }
  }
}

Status CmPipe::check_cm_events() {
  rdma_cm_event* ev = nullptr;
  while (!peer_gone_ && rdma_get_cm_event(q_.cm, &ev) == 0) {
    const auto type = ev->event;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
        type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
      peer_gone_ = true;
      gone_event_ = rdma_event_str(type);
    }
  }
  if (!peer_gone_) return {};
  return Error(
      Errc::connection_closed,
      fmt::format("{}: the peer disconnected during the handshake ({})", name_, gone_event_));
}

}  // namespace rdmarepl::transport::verbs
