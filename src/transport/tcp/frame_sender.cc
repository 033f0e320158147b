// The TCP transport's outgoing stream: gathering frames into iovecs, sendmsg(), accounting
// partial sends, and the bounded last words of the error and close paths.
#include "frame_sender.h"

#include <poll.h>
#include <sys/socket.h>

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

}  // namespace

FrameSender::FrameSender(SendQueue& sq, OutgoingAcks& acks, ReadResponses& rsp)
    : sq_(sq), acks_(acks), rsp_(rsp), iov_(kMaxIov), iov_owner_(kMaxIov) {}

FrameSender::Outcome FrameSender::progress(int fd, int& err) noexcept {
  for (;;) {
    // A request with a bad lkey fails the connection when it reaches the wire, after the
    // requests posted before it.
    if (sq_.offset() == 0 && sq_.sent() < sq_.posted() && sq_.slot(sq_.sent()).bad_lkey)
      return Outcome::bad_lkey;
    size_t total = 0;
    const int n_iov = gather(total);
    if (n_iov == 0) return Outcome::idle;

    msghdr msg{};
    msg.msg_iov = iov_.data();
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Outcome::idle;
      err = errno;
      return Outcome::broken;
    }
    account_sent(n_iov, static_cast<size_t>(sent));
    if (static_cast<size_t>(sent) < total) return Outcome::idle;  // the socket buffer is full
  }
}

int FrameSender::gather(size_t& total) noexcept {
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
  uint64_t idx = sq_.sent();
  uint64_t rsp = rsp_.head();
  bool ctl_added = false;
  if (acks_.pending() && acks_.offset() > 0) {
    add(acks_.rest(), acks_.rest_length(), Part::control);
    ctl_added = true;
  } else if (sq_.offset() > 0) {
    add_frame_rest(sq_.slot(idx), sq_.offset());
    ++idx;
  } else if (rsp_.offset() > 0) {
    add_response_rest(rsp_.at(rsp), rsp_.offset());
    ++rsp;
  }
  if (acks_.pending() && !ctl_added) add(acks_.rest(), acks_.rest_length(), Part::control);
  for (; rsp < rsp_.tail() && n_iov + 2 <= kMaxIov; ++rsp) add_response_rest(rsp_.at(rsp), 0);
  uint32_t reads = sq_.reads_on_wire();
  while (idx < sq_.posted() && n_iov + 1 + static_cast<int>(kMaxWriteSegments) <= kMaxIov &&
         !sq_.slot(idx).bad_lkey) {
    if (sq_.slot(idx).kind == SendKind::read) {
      if (reads >= kMaxReadsInFlight) break;  // the responder holds this many responses
      ++reads;
    }
    add_frame_rest(sq_.slot(idx), 0);
    ++idx;
  }
  return n_iov;
}

void FrameSender::account_sent(int n_iov, size_t sent) noexcept {
  // Account the bytes in the order they were gathered.
  size_t left = sent;
  for (int i = 0; i < n_iov && left > 0; ++i) {
    size_t take = std::min<size_t>(left, iov_owner_[i].bytes);
    left -= take;
    if (iov_owner_[i].part == Part::control)
      acks_.advance(take);
    else if (iov_owner_[i].part == Part::response)
      rsp_.advance(take);
    else
      sq_.advance(take);
  }
}

void FrameSender::flush_control_briefly(int fd) noexcept {
  if (!acks_.pending()) return;
  // A control frame may only follow a whole frame; one cut in half stays cut.
  if (acks_.offset() == 0 && (sq_.offset() > 0 || rsp_.offset() > 0)) return;
  auto deadline = Deadline::after(kLastWordGrace);
  send_blocking(fd, acks_.rest(), acks_.rest_length(), deadline);
  acks_.drop();
}

void FrameSender::send_nak(int fd, NakSyndrome syndrome, uint64_t seq) noexcept {
  // Tell the requester which write failed: finish what is half on the wire (a control frame
  // or a data frame whose buffer is still ours to read), then the NAK; bounded wait.
  auto deadline = Deadline::after(kLastWordGrace);
  bool ok = true;
  if (acks_.pending() && acks_.offset() > 0)
    ok = send_blocking(fd, acks_.rest(), acks_.rest_length(), deadline);
  const size_t sq_offset = sq_.offset();
  if (ok && sq_offset > 0 && sq_.sent() < sq_.posted()) {
    const SendSlot& s = sq_.slot(sq_.sent());
    if (sq_offset < kFrameHeaderBytes)
      ok = send_blocking(fd, s.header + sq_offset, kFrameHeaderBytes - sq_offset, deadline);
    size_t payload_off = sq_offset > kFrameHeaderBytes ? sq_offset - kFrameHeaderBytes : 0;
    if (ok) ok = send_payload_blocking(fd, s, payload_off, deadline);
  }
  const size_t rsp_offset = rsp_.offset();
  if (ok && rsp_offset > 0 && rsp_.pending()) {
    const ReadResponse& r = rsp_.at(rsp_.head());
    if (rsp_offset < kFrameHeaderBytes)
      ok = send_blocking(fd, r.header + rsp_offset, kFrameHeaderBytes - rsp_offset, deadline);
    size_t off = rsp_offset > kFrameHeaderBytes ? rsp_offset - kFrameHeaderBytes : 0;
    if (ok) ok = send_blocking(fd, r.data + off, r.length - off, deadline);
  }
  if (ok) {
    uint8_t nak[kFrameHeaderBytes];
    FrameHeader h;
    h.type = FrameType::nak;
    h.rkey = static_cast<uint32_t>(syndrome);
    h.seq = seq;
    h.encode(nak);
    send_blocking(fd, nak, sizeof nak, deadline);
  }
}

bool FrameSender::send_payload_blocking(int fd, const SendSlot& s, size_t payload_off,
                                        Deadline deadline) noexcept {
  bool ok = true;
  for (uint8_t i = 0; i < s.n_seg && ok; ++i) {
    const LocalSegment& g = s.seg[i];
    if (payload_off >= g.length) {
      payload_off -= g.length;
      continue;
    }
    ok = send_blocking(fd, static_cast<const uint8_t*>(g.addr) + payload_off,
                       g.length - payload_off, deadline);
    payload_off = 0;
  }
  return ok;
}

}  // namespace rdmarepl::transport::tcp
