// The TCP transport's connection: posting into its queues, driving the outgoing and
// incoming streams from poll(), waiting on the socket, and the error state.
#include "tcp_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::transport::tcp {

TcpConnection::TcpConnection(bootstrap::Fd fd, std::shared_ptr<const Registry> registry,
                             PeerInfo peer, std::vector<RemoteRegion> granted,
                             uint32_t send_queue_depth, uint32_t recv_queue_depth)
    : fd_(std::move(fd)),
      registry_(std::move(registry)),
      peer_(std::move(peer)),
      peer_name_(fmt::format("node '{}' at {}", peer_.node_id, peer_.address)),
      cq_(static_cast<size_t>(send_queue_depth) + recv_queue_depth),
      sq_(send_queue_depth),
      rq_(recv_queue_depth),
      tx_(sq_, acks_, rsp_),
      rx_(*registry_, std::move(granted), sq_, rq_, rsp_, acks_, cq_) {}

TcpConnection::~TcpConnection() {
  close();
}

Error TcpConnection::error() const {
  return error_;
}

// ------------------------------------------------------------------------------ posting

PostStatus TcpConnection::post_writes(std::span<const WriteRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  for (const auto& r : requests) sq_.push(SendKind::write, r.wr_id, r, nullptr, *registry_);
  progress_send();
  return PostStatus::ok;
}

PostStatus TcpConnection::post_sends(std::span<const SendRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  for (const auto& r : requests) {
    WriteRequest w;
    w.local_addr = r.local_addr;
    w.length = r.length;
    w.lkey = r.lkey;
    w.signaled = r.signaled;
    sq_.push(SendKind::send, r.wr_id, w, nullptr, *registry_);
  }
  acks_.posts_sends();
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
    sq_.push(SendKind::read, r.wr_id, w, static_cast<uint8_t*>(r.local_addr), *registry_);
  }
  progress_send();
  return PostStatus::ok;
}

PostStatus TcpConnection::post_recvs(uint32_t count, uint64_t first_wr_id) noexcept {
  if (!healthy()) return PostStatus::disconnected;
  if (!rq_.has_room(count, cq_)) return PostStatus::queue_full;
  for (uint32_t i = 0; i < count; ++i) rq_.post(RecvSlot{first_wr_id + i, nullptr, 0});
  return PostStatus::ok;
}

PostStatus TcpConnection::post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept {
  if (!healthy()) return PostStatus::disconnected;
  if (!rq_.has_room(buffers.size(), cq_)) return PostStatus::queue_full;
  for (const auto& b : buffers) {
    if (b.length > 0 && b.addr == nullptr) return PostStatus::invalid;
    if (b.length > 0 && !registry_->check_local(b.lkey, b.addr, b.length))
      return PostStatus::invalid;
  }
  for (const auto& b : buffers)
    rq_.post(RecvSlot{b.wr_id, static_cast<uint8_t*>(b.addr), b.length});
  return PostStatus::ok;
}

// ------------------------------------------------------------------------------ progress

size_t TcpConnection::poll(std::span<Completion> out) noexcept {
  if (healthy()) {
    progress_send();  // what the socket did not take, and a deferred ack
    if (healthy() && recv_hint_ != RecvHint::not_readable && !rx_.progress(fd_.get()))
      fail_on_receive();
    recv_hint_ = RecvHint::unknown;
    if (healthy()) acks_.queue();
    if (healthy() && (!acks_.lazy() || tx_.data_pending())) progress_send();
  }
  return cq_.pop(out);
}

void TcpConnection::progress_send() noexcept {
  if (!healthy()) return;
  int err = 0;
  switch (tx_.progress(fd_.get(), err)) {
    case FrameSender::Outcome::idle:
      return;
    case FrameSender::Outcome::bad_lkey: {
      const SendSlot& s = sq_.slot(sq_.sent());
      fail(Error(Errc::invalid_argument,
                 fmt::format("request wr_id {} ({} bytes at {}) is not covered by its lkey "
                             "0x{:08x}: the buffer must lie inside a region registered with this "
                             "transport, posted with that region's lkey",
                             s.wr_id, s.length, static_cast<const void*>(s.data), s.lkey)),
           sq_.sent() + 1, WcStatus::local_protection_error);
      return;
    }
    case FrameSender::Outcome::broken:
      fail(Error(Errc::connection_closed,
                 fmt::format("sending to {} failed: the TCP connection broke ({}); the peer is "
                             "gone or reset the connection, check its log and reconnect",
                             peer_name_, errno_text(err))),
           sq_.retired() + 1, WcStatus::retry_exceeded);
      return;
  }
}

int TcpConnection::readiness(std::span<pollfd> out) noexcept {
  recv_hint_ = RecvHint::unknown;
  if (healthy() && acks_.pending() && acks_.lazy()) progress_send();  // the caller may block
  if (!cq_.empty() || !healthy() || !fd_.valid() || out.empty()) return -1;
  short events = POLLIN;
  if (tx_.wants_writable()) events |= POLLOUT;
  out[0] = pollfd{fd_.get(), events, 0};
  return 1;
}

void TcpConnection::consume_readiness(std::span<const pollfd> fds) noexcept {
  if (!fds.empty() && (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) == 0)
    recv_hint_ = RecvHint::not_readable;
}

Status TcpConnection::wait(std::chrono::milliseconds timeout) {
  if (!cq_.empty()) return ok_status();
  if (!healthy() || !fd_.valid()) return error_;
  pollfd ready{};
  (void)readiness({&ready, 1});
  auto deadline = Deadline::after(timeout);
  for (;;) {
    pollfd p = ready;
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (rc >= 0) consume_readiness({&p, 1});
    if (rc > 0) return ok_status();
    if (rc == 0) {
      return Error(Errc::timeout, fmt::format("nothing arrived from {} within {} ms", peer_name_,
                                              timeout.count()));
    }
    if (errno != EINTR)
      return errno_error(errno, fmt::format("poll() on the connection to {}", peer_name_));
  }
}

Result<bool> TcpConnection::resize_completions(uint32_t entries) {
  return cq_.resize(std::max<size_t>(entries, sq_.depth() + rq_.depth()));
}

// ------------------------------------------------------------------------------ errors

void TcpConnection::close() noexcept {
  if (fd_.valid()) {
    tx_.flush_control_briefly(fd_.get());
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
  if (healthy()) {
    fail(Error(Errc::closed,
               fmt::format("the connection to {} was closed locally; reconnect to continue",
                           peer_name_)),
         0, WcStatus::flushed);
  }
  fd_.reset();
}

void TcpConnection::fail_on_receive() noexcept {
  ReceiveFault& f = rx_.fault();
  if (f.refuse) {
    // The responder's side of a refused request: NAK, error naming the peer and the
    // violation.
    tx_.send_nak(fd_.get(), f.syndrome, f.nak_seq);
    fail(Error(f.code, fmt::format("{} {}; the TCP connection was closed", peer_name_, f.what)), 0,
         WcStatus::flushed);
    return;
  }
  fail(Error(f.code, fmt::format("{} {}", peer_name_, f.what)), f.failed_seq, f.status);
}

void TcpConnection::fail(Error why, uint64_t failed_seq, WcStatus status) noexcept {
  if (!healthy()) return;
  error_ = std::move(why);
  healthy_.store(false, std::memory_order_release);
  sq_.flush(failed_seq, status, cq_);
  rsp_.clear();
  rq_.flush(cq_);
  acks_.drop();
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace rdmarepl::transport::tcp
