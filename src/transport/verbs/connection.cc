// Control-plane half of VerbsConnection: resources, handshake, QP transitions, errors.
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmarepl/core/log.h"
#include "transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {
namespace {

// The byte each side sends once its QP is in RTS (and its automatic receives are posted);
// a side writes only after it has received the peer's.
constexpr uint8_t kReady = 0x52;

}  // namespace

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::establish(
    std::shared_ptr<TransportState> state, bootstrap::Fd socket, bootstrap::Role role,
    const ConnectionOptions& options, Deadline deadline) {
  std::unique_ptr<VerbsConnection> c(new VerbsConnection(std::move(state)));
  c->socket_ = std::move(socket);
  c->name_ = fmt::format("verbs connection with {}", bootstrap::peer_address(c->socket_.get()));
  RDMAREPL_TRY(c->create_resources(options));
  RDMAREPL_TRY(c->handshake(role, options, deadline));
  return c;
}

VerbsConnection::~VerbsConnection() {
  // Tell an RDMA CM peer at once (it would otherwise learn from a timeout); members then
  // release the QP, CQs, channel and CM id in the right order.
  if (cm_id_ && failure_ != Failure::closed) (void)rdma_disconnect(cm_id_.get());
}

Status VerbsConnection::create_resources(const ConnectionOptions& options) {
  const Device& dev = *state_->device;
  const VerbsOptions& vo = state_->options;
  sq_depth_ = options.send_queue_depth;
  rq_depth_ = options.recv_queue_depth;
  unsignaled_batch_ = vo.unsignaled_batch;
  auto_recv_ = vo.auto_recv;
  replenish_batch_ = vo.recv_replenish_batch == 0 ? 1 : vo.recv_replenish_batch;
  if (sq_depth_ == 0 || rq_depth_ == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: send/receive queue depths ({}/{}) must be positive", name_,
                             sq_depth_, rq_depth_));
  }
  // Selective signaling needs the send queue to hold two unsignaled batches; a shallow queue
  // gets a smaller batch (down to 1: every request signaled).
  unsignaled_batch_ = std::clamp<uint32_t>(unsignaled_batch_, 1, std::max(1u, sq_depth_ / 2));
  if (unsignaled_batch_ > 1 && sq_depth_ < 2 * unsignaled_batch_) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: send_queue_depth {} must be at least twice unsignaled_batch {}",
                             name_, sq_depth_, unsignaled_batch_));
  }
  const auto max_wr = static_cast<uint32_t>(dev.attr().max_qp_wr);
  const auto max_cqe = static_cast<uint32_t>(dev.attr().max_cqe);
  const uint32_t rq_total = rq_depth_ + handshake_recvs_;
  if (sq_depth_ > max_wr || rq_total > max_wr || sq_depth_ > max_cqe || rq_total > max_cqe) {
    return Error(Errc::too_large,
                 fmt::format("{}: queue depths {}/{} exceed what {} supports (max_qp_wr {}, "
                             "max_cqe {}); lower send_queue_depth / recv_queue_depth",
                             name_, sq_depth_, rq_depth_, dev.name(), max_wr, max_cqe));
  }

  channel_.reset(ibv_create_comp_channel(dev.context()));
  if (!channel_) return errno_error(errno, name_ + ": ibv_create_comp_channel");
  send_cq_.reset(
      ibv_create_cq(dev.context(), static_cast<int>(sq_depth_), nullptr, channel_.get(), 0));
  if (!send_cq_) return errno_error(errno, fmt::format("{}: ibv_create_cq({})", name_, sq_depth_));
  // The recv CQ also holds the completions of the CM handshake's receives (cm_pipe.h).
  const uint32_t rcq = (state_->srq ? vo.srq_depth : rq_depth_) + handshake_recvs_;
  recv_cq_.reset(ibv_create_cq(dev.context(), static_cast<int>(rcq), nullptr, channel_.get(), 0));
  if (!recv_cq_) return errno_error(errno, fmt::format("{}: ibv_create_cq({})", name_, rcq));
  send_cq_floor_ = send_cq_entries_ = sq_depth_;
  recv_cq_floor_ = recv_cq_entries_ = rcq;

  ibv_qp_init_attr init{};
  init.send_cq = send_cq_.get();
  init.recv_cq = recv_cq_.get();
  init.srq = state_->srq.get();
  init.qp_type = IBV_QPT_RC;
  init.qp_context = &qp_events_;
  port_errors_at_start_ = state_->async_events.port_errors();
  init.sq_sig_all = 0;
  init.cap.max_send_wr = sq_depth_;
  init.cap.max_recv_wr = state_->srq ? 0 : rq_total;
  init.cap.max_send_sge = kMaxWriteSegments;  // gathered writes
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = vo.max_inline_data;
  qp_.reset(ibv_create_qp(dev.pd(), &init));
  if (!qp_ && vo.max_inline_data > 0) {
    // Some devices refuse large inline sizes; fall back to no inline data.
    log::warn("{}: ibv_create_qp with max_inline_data {} failed ({}); retrying without inline",
              name_, vo.max_inline_data, std::strerror(errno));
    init.cap.max_inline_data = 0;
    qp_.reset(ibv_create_qp(dev.pd(), &init));
  }
  if (!qp_) {
    return errno_error(errno, fmt::format("{}: ibv_create_qp(RC, send {} recv {}, srq {})", name_,
                                          sq_depth_, rq_depth_, state_->srq ? "yes" : "no"));
  }
  max_inline_ = init.cap.max_inline_data;
  RDMAREPL_TRY(qp_to_init(qp_.get(), dev,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                          name_));

  // Data-path arrays, sized once here so that posting never allocates.
  slots_.assign(sq_depth_, SendSlot{});
  send_wrs_.assign(sq_depth_, ibv_send_wr{});
  send_sges_.assign(size_t{sq_depth_} * kMaxWriteSegments, ibv_sge{});
  recv_wrs_.assign(std::max<uint32_t>(rq_depth_, replenish_batch_), ibv_recv_wr{});
  return {};
}

Status VerbsConnection::post_initial_recvs(const ConnectionOptions& options) {
  if (auto_recv_) {
    auto_wr_id_ = rq_depth_;
    if (post_recv_chain(rq_depth_, 0) != PostStatus::ok) {
      return Error(Errc::out_of_memory,
                   fmt::format("{}: could not pre-post {} receives; lower recv_queue_depth", name_,
                               rq_depth_));
    }
    return {};
  }
  if (options.initial_recvs == 0) return {};
  if (options.initial_recvs > rq_depth_) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: initial_recvs {} exceeds recv_queue_depth {}; raise "
                             "recv_queue_depth or post fewer",
                             name_, options.initial_recvs, rq_depth_));
  }
  if (post_recv_chain(options.initial_recvs, 0) != PostStatus::ok) {
    return Error(Errc::out_of_memory,
                 fmt::format("{}: could not post {} initial receives; lower initial_recvs", name_,
                             options.initial_recvs));
  }
  return {};
}

Status VerbsConnection::handshake(bootstrap::Role role, const ConnectionOptions& options,
                                  Deadline deadline) {
  const Device& dev = *state_->device;
  local_psn_ = random_psn();
  QpEndpoint mine;
  mine.qpn = qp_->qp_num;
  mine.psn = local_psn_;
  mine.lid = dev.port_attr().lid;
  mine.gid = dev.gid();
  mine.mtu = static_cast<uint8_t>(dev.port_attr().active_mtu);
  mine.link_layer = dev.port_attr().link_layer;

  bootstrap::Hello hello;
  hello.kind = TransportKind::verbs;
  hello.node_id = options.node_id;
  hello.transport_blob = mine.serialize();
  hello.regions = options.regions;
  hello.app_data = options.app_data;
  auto theirs = bootstrap::exchange(socket_.get(), hello, role, options.pre_shared_key, deadline,
                                    &peer_.session_keys, &options.check_peer);
  if (!theirs) return theirs.error();
  name_ = fmt::format("verbs connection with {} ({})", theirs->node_id,
                      bootstrap::peer_address(socket_.get()));
  auto remote = QpEndpoint::parse(theirs->transport_blob);
  if (!remote) return Error(remote.error().code(), name_ + ": " + remote.error().message());
  if (remote->link_layer != mine.link_layer) {
    return Error(Errc::unsupported,
                 fmt::format("{}: link layers differ (ours {}, the peer's {}); both ends must be "
                             "RoCE or both InfiniBand",
                             name_, mine.link_layer, remote->link_layer));
  }
  path_mtu_ = verbs::path_mtu(mine.mtu, remote->mtu);
  RDMAREPL_TRY(qp_to_rtr(qp_.get(), dev, *remote, path_mtu_, state_->options.qp, name_));
  RDMAREPL_TRY(qp_to_rts(qp_.get(), local_psn_, state_->options.qp, name_));
  RDMAREPL_TRY(post_initial_recvs(options));
  const uint8_t ready = kReady;
  RDMAREPL_TRY(bootstrap::send_all(socket_.get(), {&ready, 1}, deadline, name_));
  uint8_t got = 0;
  RDMAREPL_TRY(bootstrap::recv_exact(socket_.get(), {&got, 1}, deadline, name_));
  if (got != kReady) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: expected the ready byte {:#x} after the handshake, got {:#x}",
                             name_, kReady, got));
  }
  peer_.node_id = theirs->node_id;
  peer_.address = bootstrap::peer_address(socket_.get());
  peer_.regions = std::move(theirs->regions);
  peer_.app_data = std::move(theirs->app_data);
  log::debug("{}: QP {:#x} -> {:#x} in RTS (path MTU {}, PSN {:#x}/{:#x}, inline {})", name_,
             mine.qpn, remote->qpn, to_string(path_mtu_), local_psn_, remote->psn, max_inline_);
  return {};
}

int VerbsConnection::readiness(std::span<pollfd> out) noexcept {
  if (stash_begin_ != stash_end_ || !healthy() || out.size() < 2) return -1;
  // Arm first, then look: a completion that arrived before arming raises no event, so it
  // is reaped into the stash here and handed out by the next poll().
  if (ibv_req_notify_cq(send_cq_.get(), 0) != 0 || ibv_req_notify_cq(recv_cq_.get(), 0) != 0) {
    arm_errno_ = errno;
    return -1;
  }
  stash_begin_ = 0;
  stash_end_ = reap_send({stash_.data(), kStash / 2});
  stash_end_ += reap_recv({stash_.data() + stash_end_, kStash - stash_end_});
  if (stash_end_ != 0) return -1;
  check_liveness();
  if (!healthy()) return -1;
  out[0] = pollfd{channel_->fd, POLLIN, 0};
  if (liveness_fd() < 0) return 1;
  out[1] = pollfd{liveness_fd(), POLLIN | POLLRDHUP, 0};
  return 2;
}

void VerbsConnection::consume_readiness(std::span<const pollfd> fds) noexcept {
  if (!fds.empty() && (fds[0].revents & POLLIN) != 0) {
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(channel_.get(), &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
  }
  if (fds.size() > 1 && fds[1].revents != 0) {
    next_liveness_check_ns_ = 0;
    check_liveness();
  }
}

Status VerbsConnection::wait(std::chrono::milliseconds timeout) {
  if (stash_begin_ != stash_end_ || !healthy()) return {};
  auto deadline = Deadline::after(timeout);
  for (;;) {
    pollfd fds[2];
    arm_errno_ = 0;
    const int nfds = readiness(fds);
    if (arm_errno_ != 0) return errno_error(arm_errno_, name_ + ": ibv_req_notify_cq");
    if (nfds < 0) return {};
    // Wake at least every 100 ms to look at the QP state (an error without a completion).
    int ms = deadline.poll_timeout_ms();
    if (ms < 0 || ms > 100) ms = 100;
    int n = ::poll(fds, static_cast<nfds_t>(nfds), ms);
    if (n < 0 && errno != EINTR) return errno_error(errno, name_ + ": poll");
    if (n > 0) {
      consume_readiness({fds, static_cast<size_t>(nfds)});
      if ((fds[0].revents & POLLIN) != 0 || !healthy()) return {};
    }
    if (deadline.expired()) {
      return Error(Errc::timeout,
                   fmt::format("{}: nothing to poll within {} ms", name_, timeout.count()));
    }
  }
}

int VerbsConnection::liveness_fd() const noexcept {
  if (cm_channel_) return cm_channel_->fd;
  return socket_.get();
}

void VerbsConnection::check_liveness() noexcept {
  if (failed_.load(std::memory_order_relaxed)) return;
  if (cm_channel_) {
    // The channel's fd is non-blocking (cm.cc): this returns at once when nothing is queued.
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(cm_channel_.get(), &ev) == 0) {
      const auto type = ev->event;
      rdma_ack_cm_event(ev);
      if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
          type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
        fail(Failure::peer_closed);
        return;
      }
    }
  }
  if (socket_.valid()) {
    uint8_t b;
    ssize_t n = ::recv(socket_.get(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      fail(Failure::peer_closed);
      return;
    }
  }
  if (const int ev = qp_events_.event.load(std::memory_order_acquire); ev >= 0) {
    fail(Failure::qp_event, WcStatus::fatal, ev);
    return;
  }
  if (state_->async_events.port_errors() != port_errors_at_start_) {
    fail(Failure::port_down);
    return;
  }
  ibv_qp_state s = qp_state(qp_.get());
  if (s == IBV_QPS_ERR || s == IBV_QPS_SQE) fail(Failure::qp_error);
}

void VerbsConnection::fail(Failure why, WcStatus status, int raw_status, uint32_t vendor_err,
                           uint64_t wr_id) noexcept {
  // The first failure wins, except that a completion's own status replaces "the QP entered
  // the error state" seen by a state check that ran before the completion was reaped (the
  // status says why; a retry-exceeded write would otherwise be reported without it).
  if (failed_.load(std::memory_order_relaxed) &&
      !(failure_ == Failure::qp_error && why == Failure::completion))
    return;
  failure_ = why;
  failure_status_ = status;
  failure_raw_ = raw_status;
  failure_vendor_ = vendor_err;
  failure_wr_id_ = wr_id;
  failed_.store(true, std::memory_order_release);
  // Outstanding requests complete as flushed from here on (a no-op if already in ERR).
  (void)qp_to_error(qp_.get());
}

Error VerbsConnection::error() const {
  if (!failed_.load(std::memory_order_acquire)) return Error();
  switch (failure_) {
    case Failure::completion:
      return Error(Errc::io_error,
                   fmt::format("{}: QP {:#x} failed: {} (ibv_wc_status {} \"{}\", vendor error "
                               "{:#x}) on wr_id {}; {}",
                               name_, qp_->qp_num, to_string(failure_status_), failure_raw_,
                               ibv_wc_status_str(static_cast<ibv_wc_status>(failure_raw_)),
                               failure_vendor_, failure_wr_id_, wc_status_advice(failure_status_)));
    case Failure::peer_closed:
      return Error(Errc::connection_closed,
                   fmt::format("{}: the peer closed the connection ({}); reconnect when it is "
                               "back",
                               name_,
                               cm_id_ ? "RDMA CM disconnect"
                                      : "its bootstrap socket shut "
                                        "down"));
    case Failure::closed:
      return Error(Errc::closed, fmt::format("{}: closed locally", name_));
    case Failure::post_failed:
      return Error(Errc::io_error,
                   fmt::format("{}: ibv_post_send failed part-way through a chain ({}); the QP "
                               "was moved to the error state; reconnect",
                               name_, std::strerror(failure_raw_)));
    case Failure::qp_error:
      return Error(Errc::io_error,
                   fmt::format("{}: QP {:#x} entered the error state without a completion "
                               "(e.g. the peer rejected a request, or the port went down); "
                               "reconnect",
                               name_, qp_->qp_num));
    case Failure::port_down:
      return Error(Errc::io_error,
                   fmt::format("{}: port {} of {} went down (IBV_EVENT_PORT_ERR); reconnect once "
                               "the link is back (check it with `ip link` / `ibv_devinfo`)",
                               name_, state_->device->port(), state_->device->name()));
    case Failure::qp_event:
      return Error(Errc::io_error,
                   fmt::format("{}: QP {:#x} failed: async event {}; reconnect", name_, qp_->qp_num,
                               to_string(static_cast<ibv_event_type>(failure_raw_))));
    case Failure::none:
      break;
  }
  return Error(Errc::io_error, name_ + ": failed");
}

void VerbsConnection::close() noexcept {
  fail(Failure::closed);
  if (socket_.valid()) ::shutdown(socket_.get(), SHUT_RDWR);
  if (cm_id_) (void)rdma_disconnect(cm_id_.get());
}

Result<bool> VerbsConnection::resize_completions(uint32_t entries) {
  // Between the floor (create_resources() checked it against max_cqe) and the device's max.
  const auto max_cqe = static_cast<uint32_t>(state_->device->attr().max_cqe);
  const uint32_t send = std::max(std::min(entries, max_cqe), send_cq_floor_);
  const uint32_t recv = std::max(std::min(entries, max_cqe), recv_cq_floor_);
  if (send == send_cq_entries_ && recv == recv_cq_entries_) return false;
  if (send != send_cq_entries_) {
    if (int rc = ibv_resize_cq(send_cq_.get(), static_cast<int>(send)); rc != 0)
      return errno_error(rc, fmt::format("{}: ibv_resize_cq(send, {})", name_, send));
    send_cq_entries_ = send;
  }
  if (recv != recv_cq_entries_) {
    if (int rc = ibv_resize_cq(recv_cq_.get(), static_cast<int>(recv)); rc != 0)
      return errno_error(rc, fmt::format("{}: ibv_resize_cq(recv, {})", name_, recv));
    recv_cq_entries_ = recv;
  }
  return true;
}

}  // namespace rdmarepl::transport::verbs
