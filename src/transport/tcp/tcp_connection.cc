// Data path of the TCP transport: posting, sending, placing and completing.
#include "tcp_connection.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rdmarepl::transport::tcp {
namespace {

// How long the error and close paths wait to get a last control frame (NAK, ack) out.
constexpr auto kLastWordGrace = std::chrono::milliseconds(200);

// Sends `len` bytes, waiting for room until `deadline`. Error paths only.
bool send_blocking(int fd, const uint8_t* p, size_t len, Deadline deadline) noexcept {
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      if (::poll(&pf, 1, deadline.poll_timeout_ms()) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

// The NAK in TCP's own words (the completion status stays the verbs-style one).
std::string_view nak_text(NakSyndrome s) noexcept {
  switch (s) {
    case NakSyndrome::remote_access:
      return "remote access refused: rkey unknown, region not writable or range outside it";
    case NakSyndrome::not_ready:
      return "receiver not ready (RNR)";
    case NakSyndrome::invalid_request:
      return "invalid request";
  }
  return "unknown syndrome";
}

WcStatus status_of(NakSyndrome s) noexcept {
  switch (s) {
    case NakSyndrome::remote_access:
      return WcStatus::remote_access_error;
    case NakSyndrome::not_ready:
      return WcStatus::rnr_retry_exceeded;
    case NakSyndrome::invalid_request:
      return WcStatus::remote_invalid_request;
  }
  return WcStatus::remote_operation_error;
}

}  // namespace

TcpConnection::TcpConnection(bootstrap::Fd fd, std::shared_ptr<const Registry> registry,
                             PeerInfo peer, uint32_t send_queue_depth, uint32_t recv_queue_depth)
    : fd_(std::move(fd)),
      registry_(std::move(registry)),
      peer_(std::move(peer)),
      peer_name_(fmt::format("node '{}' at {}", peer_.node_id, peer_.address)),
      sq_(send_queue_depth),
      ack_interval_(std::max(1u, send_queue_depth / 2)),
      rq_(recv_queue_depth),
      stage_(kStageBytes),
      rsp_(kMaxReadsInFlight),
      cq_(static_cast<size_t>(send_queue_depth) + recv_queue_depth),
      iov_(kMaxIov),
      iov_owner_(kMaxIov) {}

TcpConnection::~TcpConnection() {
  close();
}

Error TcpConnection::error() const {
  return error_;
}

PostStatus TcpConnection::post_writes(std::span<const WriteRequest> requests) noexcept {
  if (PostStatus st = admit(requests); st != PostStatus::ok || requests.empty()) return st;
  for (const auto& r : requests) push_slot(Kind::write, r.wr_id, r, nullptr);
  progress_send();
  return PostStatus::ok;
}

void TcpConnection::push_slot(Kind kind, uint64_t wr_id, const WriteRequest& r,
                              uint8_t* read_dst) noexcept {
  SendSlot& s = slot(sq_posted_);
  uint64_t seq = sq_posted_ + 1;
  s.kind = kind;
  s.wr_id = wr_id;
  s.read_dst = read_dst;
  s.data = static_cast<const uint8_t*>(r.local_addr);
  s.length = static_cast<uint32_t>(r.total_length());
  s.signaled = r.signaled;
  s.lkey = r.lkey;
  s.bad_lkey = !load_segments(s, r);
  if (kind == Kind::read) s.n_seg = 0;  // the request carries no payload
  s.wire_length = kind == Kind::read ? 0 : s.length;
  FrameHeader h;
  h.type = kind == Kind::write  ? FrameType::write
           : kind == Kind::send ? FrameType::send
                                : FrameType::read_request;
  const bool ack = kind != Kind::read && (r.signaled || seq % ack_interval_ == 0);
  h.flags = ack ? kFlagAckRequested : 0;
  h.length = s.length;
  h.remote_addr = r.remote_addr;
  h.rkey = r.rkey;
  h.imm = r.imm;
  h.seq = seq;
  h.encode(s.header);
  ++sq_posted_;
}

bool TcpConnection::load_segments(SendSlot& s, const WriteRequest& r) const noexcept {
  bool ok = true;
  s.n_seg = 0;
  for (size_t i = 0; i < r.segment_count(); ++i) {
    LocalSegment g = r.segment(i);
    if (g.length == 0) continue;
    if (!registry_->check_local(g.lkey, g.addr, g.length)) {
      ok = false;
      s.data = static_cast<const uint8_t*>(g.addr);  // name the bad segment in the error
      s.lkey = g.lkey;
    }
    s.seg[s.n_seg++] = g;
  }
  return ok;
}

PostStatus TcpConnection::post_recvs(uint32_t count, uint64_t first_wr_id) noexcept {
  if (!healthy()) return PostStatus::disconnected;
  if (count > rq_.size() - ((rq_posted_ - rq_consumed_) + recv_cq_pending_))
    return PostStatus::queue_full;
  for (uint32_t i = 0; i < count; ++i)
    rq_[(rq_posted_ + i) % rq_.size()] = RecvSlot{first_wr_id + i, nullptr, 0};
  rq_posted_ += count;
  return PostStatus::ok;
}

size_t TcpConnection::poll(std::span<Completion> out) noexcept {
  if (healthy()) {
    progress_send();  // what the socket did not take, and a deferred ack
    if (recv_hint_ != RecvHint::not_readable) progress_recv();
    recv_hint_ = RecvHint::unknown;
    if (healthy()) queue_ack();
    if (healthy() && (!ctl_lazy_ || data_pending())) progress_send();
  }
  size_t n = 0;
  while (n < out.size() && cq_head_ != cq_tail_) {
    const Completion& c = cq_[cq_head_ % cq_.size()];
    ++cq_head_;
    if (is_send_side(c.opcode))
      --send_cq_pending_;
    else
      --recv_cq_pending_;
    out[n++] = c;
  }
  return n;
}

int TcpConnection::readiness(std::span<pollfd> out) noexcept {
  recv_hint_ = RecvHint::unknown;
  if (healthy() && ctl_pending_ && ctl_lazy_) progress_send();  // the caller may block
  if (cq_head_ != cq_tail_ || !healthy() || !fd_.valid() || out.empty()) return -1;
  short events = POLLIN;
  if (sq_sent_ < sq_posted_ || ctl_pending_ || rsp_head_ < rsp_tail_) events |= POLLOUT;
  out[0] = pollfd{fd_.get(), events, 0};
  return 1;
}

void TcpConnection::consume_readiness(std::span<const pollfd> fds) noexcept {
  if (!fds.empty() && (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) == 0)
    recv_hint_ = RecvHint::not_readable;
}

Status TcpConnection::wait(std::chrono::milliseconds timeout) {
  if (cq_head_ != cq_tail_) return ok_status();
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

void TcpConnection::close() noexcept {
  if (fd_.valid()) {
    flush_control_briefly();
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

// ------------------------------------------------------------------------------ sending

void TcpConnection::queue_control(FrameType type, uint64_t seq, uint32_t syndrome) noexcept {
  FrameHeader h;
  h.type = type;
  h.rkey = syndrome;
  h.seq = seq;
  h.encode(ctl_);
  ctl_offset_ = 0;
  ctl_pending_ = true;
}

void TcpConnection::queue_ack() noexcept {
  if (ack_wanted_ <= ack_sent_) return;
  // A deferred ack not yet on the wire is brought up to date (acks are cumulative); any
  // other control frame in flight goes first.
  if (ctl_pending_ && !(ctl_lazy_ && ctl_offset_ == 0)) return;
  queue_control(FrameType::ack, ack_wanted_, 0);
  ack_sent_ = ack_wanted_;
  // Only Sends asked, and this side sends too (request/response): the ack waits for our
  // next frame or call.
  ctl_lazy_ = !ack_urgent_ && posts_sends_;
  ack_urgent_ = false;
}

void TcpConnection::progress_send() noexcept {
  while (healthy()) {
    // A request with a bad lkey fails the connection when it reaches the wire, after the
    // requests posted before it.
    if (sq_offset_ == 0 && sq_sent_ < sq_posted_ && slot(sq_sent_).bad_lkey) {
      const SendSlot& s = slot(sq_sent_);
      fail(Error(Errc::invalid_argument,
                 fmt::format("request wr_id {} ({} bytes at {}) is not covered by its lkey "
                             "0x{:08x}: the buffer must lie inside a region registered with this "
                             "transport, posted with that region's lkey",
                             s.wr_id, s.length, static_cast<const void*>(s.data), s.lkey)),
           sq_sent_ + 1, WcStatus::local_protection_error);
      return;
    }
    size_t total = 0;
    const int n_iov = gather(total);
    if (n_iov == 0) return;

    msghdr msg{};
    msg.msg_iov = iov_.data();
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t sent = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      int err = errno;
      fail(Error(Errc::connection_closed,
                 fmt::format("sending to {} failed: the TCP connection broke ({}); the peer is "
                             "gone or reset the connection, check its log and reconnect",
                             peer_name_, errno_text(err))),
           sq_retired_ + 1, WcStatus::retry_exceeded);
      return;
    }
    account_sent(n_iov, static_cast<size_t>(sent));
    if (static_cast<size_t>(sent) < total) return;  // the socket buffer is full
  }
}

int TcpConnection::gather(size_t& total) noexcept {
  int n_iov = 0;
  auto add = [&](const void* p, size_t len, Part part) {
    iov_[n_iov] = iovec{const_cast<void*>(p), len};
    iov_owner_[n_iov] = IovOwner{part, static_cast<uint32_t>(len)};
    ++n_iov;
    total += len;
  };
  auto add_frame_rest = [&](const SendSlot& s, size_t off) {
    if (off < kFrameHeaderBytes) add(s.header + off, kFrameHeaderBytes - off, Part::data);
    size_t skip = off > kFrameHeaderBytes ? off - kFrameHeaderBytes : 0;
    for (uint8_t i = 0; i < s.n_seg; ++i) {
      const LocalSegment& g = s.seg[i];
      if (skip >= g.length) {
        skip -= g.length;
        continue;
      }
      add(static_cast<const uint8_t*>(g.addr) + skip, g.length - skip, Part::data);
      skip = 0;
    }
  };
  auto add_response_rest = [&](const ReadResponse& r, size_t off) {
    if (off < kFrameHeaderBytes) add(r.header + off, kFrameHeaderBytes - off, Part::response);
    size_t skip = off > kFrameHeaderBytes ? off - kFrameHeaderBytes : 0;
    if (r.length > skip) add(r.data + skip, r.length - skip, Part::response);
  };
  // The stream is cut at one point at most: finish the frame that was cut first.
  uint64_t idx = sq_sent_;
  uint64_t rsp = rsp_head_;
  bool ctl_added = false;
  if (ctl_pending_ && ctl_offset_ > 0) {
    add(ctl_ + ctl_offset_, kFrameHeaderBytes - ctl_offset_, Part::control);
    ctl_added = true;
  } else if (sq_offset_ > 0) {
    add_frame_rest(slot(idx), sq_offset_);
    ++idx;
  } else if (rsp_offset_ > 0) {
    add_response_rest(rsp_[rsp % rsp_.size()], rsp_offset_);
    ++rsp;
  }
  if (ctl_pending_ && !ctl_added)
    add(ctl_ + ctl_offset_, kFrameHeaderBytes - ctl_offset_, Part::control);
  for (; rsp < rsp_tail_ && n_iov + 2 <= kMaxIov; ++rsp)
    add_response_rest(rsp_[rsp % rsp_.size()], 0);
  uint32_t reads = reads_on_wire_;
  while (idx < sq_posted_ && n_iov + 1 + static_cast<int>(kMaxWriteSegments) <= kMaxIov &&
         !slot(idx).bad_lkey) {
    if (slot(idx).kind == Kind::read) {
      if (reads >= kMaxReadsInFlight) break;  // the responder holds this many responses
      ++reads;
    }
    add_frame_rest(slot(idx), 0);
    ++idx;
  }
  return n_iov;
}

void TcpConnection::account_sent(int n_iov, size_t sent) noexcept {
  // Account the bytes in the order they were gathered.
  size_t left = sent;
  for (int i = 0; i < n_iov && left > 0; ++i) {
    size_t take = std::min<size_t>(left, iov_owner_[i].bytes);
    left -= take;
    if (iov_owner_[i].part == Part::control) {
      ctl_offset_ += take;
      if (ctl_offset_ == kFrameHeaderBytes) {
        ctl_pending_ = false;
        ctl_lazy_ = false;
        ctl_offset_ = 0;
      }
    } else if (iov_owner_[i].part == Part::response) {
      rsp_offset_ += take;
      if (rsp_offset_ == kFrameHeaderBytes + rsp_[rsp_head_ % rsp_.size()].length) {
        ++rsp_head_;
        rsp_offset_ = 0;
      }
    } else {
      if (sq_offset_ == 0 && take > 0 && slot(sq_sent_).kind == Kind::read) ++reads_on_wire_;
      sq_offset_ += take;
      if (sq_offset_ == kFrameHeaderBytes + slot(sq_sent_).wire_length) {
        ++sq_sent_;
        sq_offset_ = 0;
      }
    }
  }
}

void TcpConnection::flush_control_briefly() noexcept {
  if (!fd_.valid() || !ctl_pending_) return;
  // A control frame may only follow a whole frame; one cut in half stays cut.
  if (ctl_offset_ == 0 && (sq_offset_ > 0 || rsp_offset_ > 0)) return;
  auto deadline = Deadline::after(kLastWordGrace);
  send_blocking(fd_.get(), ctl_ + ctl_offset_, kFrameHeaderBytes - ctl_offset_, deadline);
  ctl_pending_ = false;
  ctl_lazy_ = false;
  ctl_offset_ = 0;
}

// ------------------------------------------------------------------------------ receiving

bool TcpConnection::start_frame() noexcept {
  if (!in_.decode(rhdr_)) {
    in_.seq = 0;  // not a write: the NAK names none
    refuse(NakSyndrome::invalid_request, Errc::protocol_error,
           fmt::format("sent bytes that are not a valid frame header ({:02x}); the stream is "
                       "corrupt or the peer is not an rdmarepl TCP transport",
                       fmt::join(rhdr_, rhdr_ + 8, " ")));
    return false;
  }
  switch (in_.type) {
    case FrameType::ack:
      if (in_.seq < ack_floor_ || in_.seq > sq_sent_) {
        fail(Error(Errc::protocol_error,
                   fmt::format("{} acknowledged write seq {}, but only writes {}..{} are "
                               "unacknowledged on the wire; the peer is faulty, reconnect",
                               peer_name_, in_.seq, ack_floor_ + 1, sq_sent_)),
             0, WcStatus::flushed);
        return false;
      }
      ack_floor_ = in_.seq;
      retire_acked(in_.seq);
      return true;
    case FrameType::nak: {
      // As in RC, a NAK acknowledges every write before the one it names.
      if (in_.seq > sq_retired_ + 1 && in_.seq - 1 <= sq_sent_) retire_acked(in_.seq - 1);
      auto syndrome = static_cast<NakSyndrome>(in_.rkey);
      WcStatus st = status_of(syndrome);
      uint64_t wr_id = in_.seq > sq_retired_ && in_.seq <= sq_posted_ ? slot(in_.seq - 1).wr_id : 0;
      Errc code = syndrome == NakSyndrome::remote_access ? Errc::remote_access
                  : syndrome == NakSyndrome::not_ready   ? Errc::busy
                                                         : Errc::protocol_error;
      fail(Error(code,
                 fmt::format("{} refused our write seq {} (wr_id {}) with a TCP NAK: {}; {}",
                             peer_name_, in_.seq, wr_id, nak_text(syndrome), wc_status_advice(st))),
           in_.seq, st);
      return false;
    }
    case FrameType::read_response:
      return start_read_response();
    case FrameType::write:
    case FrameType::send:
    case FrameType::read_request:
      break;
  }
  if (in_.seq != recv_seq_ + 1) {
    refuse(NakSyndrome::invalid_request, Errc::protocol_error,
           fmt::format("sent {} but write seq {} was expected (a frame was lost or injected)",
                       describe_incoming(), recv_seq_ + 1));
    return false;
  }
  if (in_.type == FrameType::read_request) return start_read_request();
  if (rq_consumed_ == rq_posted_) {
    refuse(NakSyndrome::not_ready, Errc::busy,
           fmt::format("sent {} but no receive was posted here (receiver not ready); post "
                       "receives before the peer writes",
                       describe_incoming()));
    return false;
  }
  if (in_.type == FrameType::send) return start_send_frame();
  if (in_.length == 0) {  // touches no memory: no region check (as on InfiniBand)
    finish_frame();
    return true;
  }
  return check_write_target();
}

bool TcpConnection::check_write_target() noexcept {
  std::shared_lock lock(registry_->mutex());
  const Registry::Entry* e = registry_->find_remote_locked(in_.rkey);
  const char* violation = nullptr;
  if (e == nullptr)
    violation = "its rkey is not registered here (forged or stale key)";
  else if (!has(e->access, Access::remote_write))
    violation = "its region is not registered with remote write access";
  else if (!e->covers(static_cast<uintptr_t>(in_.remote_addr), in_.length))
    violation = "the range does not lie wholly inside the region of that rkey";
  if (violation != nullptr) {
    std::string region = e == nullptr
                             ? std::string()
                             : fmt::format(" [0x{:x}, 0x{:x})", e->begin, e->begin + e->length);
    lock.unlock();
    refuse(NakSyndrome::remote_access, Errc::remote_access,
           fmt::format("sent {}: {}{}; nothing was written; re-exchange region descriptors",
                       describe_incoming(), violation, region));
    return false;
  }
  in_generation_ = e->generation;
  in_done_ = 0;
  rstate_ = RecvState::payload;
  return true;
}

void TcpConnection::finish_frame() noexcept {
  if (in_.type == FrameType::read_response) {
    complete_read();
    return;
  }
  recv_seq_ = in_.seq;
  uint64_t wr_id = rq_[rq_consumed_ % rq_.size()].wr_id;
  ++rq_consumed_;
  ++recv_cq_pending_;
  const WcOpcode op = in_.type == FrameType::send ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
  const uint32_t imm = in_.type == FrameType::send ? 0 : in_.imm;
  push_completion(Completion{wr_id, imm, in_.length, op, WcStatus::success});
  if ((in_.flags & kFlagAckRequested) != 0) {
    ack_wanted_ = recv_seq_;
    if (in_.type == FrameType::write) ack_urgent_ = true;
  }
}

void TcpConnection::retire_acked(uint64_t acked_seq) noexcept {
  while (sq_retired_ < acked_seq) {
    const SendSlot& s = slot(sq_retired_);
    if (s.kind == Kind::read) {  // completes with its response, then the rest retires
      ack_pending_ = std::max(ack_pending_, acked_seq);
      return;
    }
    if (s.signaled) {
      ++send_cq_pending_;
      const WcOpcode op = s.kind == Kind::send ? WcOpcode::send : WcOpcode::rdma_write;
      push_completion(Completion{s.wr_id, 0, s.length, op, WcStatus::success});
    }
    ++sq_retired_;
  }
}

Result<bool> TcpConnection::resize_completions(uint32_t entries) {
  const size_t size = std::max<size_t>(entries, sq_.size() + rq_.size());
  if (size == cq_.size()) return false;
  std::vector<Completion> ring(size);
  for (uint64_t i = cq_head_; i != cq_tail_; ++i) ring[i % size] = cq_[i % cq_.size()];
  cq_ = std::move(ring);
  return true;
}

void TcpConnection::push_completion(const Completion& c) noexcept {
  // Cannot overflow: send_in_use() and the receive accounting keep the completions that
  // are queued or may still be produced within cq_.size().
  cq_[cq_tail_ % cq_.size()] = c;
  ++cq_tail_;
}

// ------------------------------------------------------------------------------ errors

void TcpConnection::fail(Error why, uint64_t failed_seq, WcStatus status) noexcept {
  if (!healthy()) return;
  error_ = std::move(why);
  healthy_.store(false, std::memory_order_release);
  for (uint64_t i = sq_retired_; i < sq_posted_; ++i) {
    const SendSlot& s = slot(i);
    ++send_cq_pending_;
    const WcOpcode op = s.kind == Kind::write  ? WcOpcode::rdma_write
                        : s.kind == Kind::send ? WcOpcode::send
                                               : WcOpcode::rdma_read;
    push_completion(
        Completion{s.wr_id, 0, 0, op, i + 1 == failed_seq ? status : WcStatus::flushed});
  }
  sq_retired_ = sq_sent_ = sq_posted_;
  sq_offset_ = 0;
  reads_on_wire_ = 0;
  rsp_head_ = rsp_tail_;
  rsp_offset_ = 0;
  for (uint64_t i = rq_consumed_; i < rq_posted_; ++i) {
    ++recv_cq_pending_;
    const RecvSlot& r = rq_[i % rq_.size()];
    const WcOpcode op = r.addr != nullptr ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
    push_completion(Completion{r.wr_id, 0, 0, op, WcStatus::flushed});
  }
  rq_consumed_ = rq_posted_;
  ctl_pending_ = false;
  ctl_lazy_ = false;
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

bool TcpConnection::send_payload_blocking(const SendSlot& s, size_t payload_off,
                                          Deadline deadline) noexcept {
  bool ok = true;
  for (uint8_t i = 0; i < s.n_seg && ok; ++i) {
    const LocalSegment& g = s.seg[i];
    if (payload_off >= g.length) {
      payload_off -= g.length;
      continue;
    }
    ok = send_blocking(fd_.get(), static_cast<const uint8_t*>(g.addr) + payload_off,
                       g.length - payload_off, deadline);
    payload_off = 0;
  }
  return ok;
}

void TcpConnection::refuse(NakSyndrome syndrome, Errc code, std::string violation) noexcept {
  // Tell the requester which write failed: finish what is half on the wire (a control frame
  // or a data frame whose buffer is still ours to read), then the NAK; bounded wait.
  auto deadline = Deadline::after(kLastWordGrace);
  bool ok = true;
  if (ctl_pending_ && ctl_offset_ > 0)
    ok = send_blocking(fd_.get(), ctl_ + ctl_offset_, kFrameHeaderBytes - ctl_offset_, deadline);
  if (ok && sq_offset_ > 0 && sq_sent_ < sq_posted_) {
    const SendSlot& s = slot(sq_sent_);
    if (sq_offset_ < kFrameHeaderBytes)
      ok =
          send_blocking(fd_.get(), s.header + sq_offset_, kFrameHeaderBytes - sq_offset_, deadline);
    size_t payload_off = sq_offset_ > kFrameHeaderBytes ? sq_offset_ - kFrameHeaderBytes : 0;
    if (ok) ok = send_payload_blocking(s, payload_off, deadline);
  }
  if (ok && rsp_offset_ > 0 && rsp_head_ < rsp_tail_) {
    const ReadResponse& r = rsp_[rsp_head_ % rsp_.size()];
    if (rsp_offset_ < kFrameHeaderBytes)
      ok = send_blocking(fd_.get(), r.header + rsp_offset_, kFrameHeaderBytes - rsp_offset_,
                         deadline);
    size_t off = rsp_offset_ > kFrameHeaderBytes ? rsp_offset_ - kFrameHeaderBytes : 0;
    if (ok) ok = send_blocking(fd_.get(), r.data + off, r.length - off, deadline);
  }
  if (ok) {
    uint8_t nak[kFrameHeaderBytes];
    FrameHeader h;
    h.type = FrameType::nak;
    h.rkey = static_cast<uint32_t>(syndrome);
    h.seq = in_.seq;
    h.encode(nak);
    send_blocking(fd_.get(), nak, sizeof nak, deadline);
  }
  fail(Error(code, fmt::format("{} {}; the TCP connection was closed", peer_name_, violation)), 0,
       WcStatus::flushed);
}

}  // namespace rdmarepl::transport::tcp
