// Receiving on the TCP transport: reading the socket into the staging buffer (or a large
// payload straight into place), parsing frames and placing their payloads
// (docs/transport.md, "Receiving and placement checks"), and the requester's and
// responder's handling of acks, NAKs, messages and RDMA Reads (docs/wire_format.md, "TCP
// transport frames").
#include "frame_receiver.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace rdmarepl::transport::tcp {
namespace {

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

FrameReceiver::FrameReceiver(const Registry& registry, std::vector<RemoteRegion> granted,
                             SendQueue& sq, RecvQueue& rq, ReadResponses& rsp, OutgoingAcks& acks,
                             CompletionRing& cq)
    : registry_(registry),
      granted_(std::move(granted)),
      sq_(sq),
      rq_(rq),
      rsp_(rsp),
      acks_(acks),
      cq_(cq),
      stage_(kStageBytes) {}

bool FrameReceiver::granted(uint32_t rkey, uint64_t addr, uint64_t len) const noexcept {
  if (granted_.empty()) return true;
  for (const RemoteRegion& g : granted_)
    if (g.rkey == rkey && addr >= g.addr && addr - g.addr <= g.length &&
        len <= g.length - (addr - g.addr))
      return true;
  return false;
}

bool FrameReceiver::progress(int fd) noexcept {
  size_t budget = kRecvBudgetBytes;
  while (budget > 0) {
    if (!drain_stage()) return false;
    ssize_t n = 0;
    size_t want = 0;
    if (rstate_ == RecvState::payload) {
      // The stage is empty: the rest of the payload goes straight into place and what
      // follows it into the stage, in one call (a write under the registry's lock).
      std::shared_lock lock(registry_.mutex(), std::defer_lock);
      if (!lock_write_target(lock)) return false;
      const size_t rest = in_.length - in_done_;
      iovec v[2] = {{payload_target() + in_done_, rest}, {stage_.data(), stage_.size()}};
      want = rest + stage_.size();
      n = ::readv(fd, v, 2);
      if (n > 0) {
        const size_t placed = std::min(static_cast<size_t>(n), rest);
        in_done_ += placed;
        st_tail_ = static_cast<size_t>(n) - placed;
      }
    } else {
      want = stage_.size() - st_tail_;
      n = ::recv(fd, stage_.data() + st_tail_, want, MSG_DONTWAIT);
      if (n > 0) st_tail_ += static_cast<size_t>(n);
    }
    if (n > 0) {
      budget -= std::min(budget, static_cast<size_t>(n));
      if (rstate_ == RecvState::payload && in_done_ == in_.length) {
        rstate_ = RecvState::header;
        finish_frame();
      }
      if (static_cast<size_t>(n) < want) break;  // the socket is drained
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return read_failed(n);
  }
  return drain_stage();
}

bool FrameReceiver::drain_stage() noexcept {
  // Runs until the stage holds no whole header (or the payload waits for more bytes): a
  // frame that must fail the connection returns false at once.
  for (;;) {
    const size_t avail = st_tail_ - st_head_;
    if (rstate_ == RecvState::payload) {
      if (avail == 0) break;
      if (!place_staged(std::min(avail, size_t{in_.length} - in_done_))) return false;
      if (in_done_ < in_.length) break;  // the stage is empty
      rstate_ = RecvState::header;
      finish_frame();
      continue;
    }
    if (avail < kFrameHeaderBytes) break;
    std::memcpy(rhdr_, stage_.data() + st_head_, kFrameHeaderBytes);
    st_head_ += kFrameHeaderBytes;
    if (!start_frame()) return false;
  }
  // What is left is part of a header (or nothing): move it to the front.
  const size_t left = st_tail_ - st_head_;
  if (left > 0 && st_head_ > 0) std::memmove(stage_.data(), stage_.data() + st_head_, left);
  st_head_ = 0;
  st_tail_ = left;
  return true;
}

bool FrameReceiver::place_staged(size_t take) noexcept {
  std::shared_lock lock(registry_.mutex(), std::defer_lock);
  if (!lock_write_target(lock)) return false;
  std::memcpy(payload_target() + in_done_, stage_.data() + st_head_, take);
  st_head_ += take;
  in_done_ += take;
  return true;
}

bool FrameReceiver::lock_write_target(std::shared_lock<std::shared_mutex>& lock) noexcept {
  if (in_.type != FrameType::write) return true;
  lock.lock();
  if (write_target_valid()) return true;
  lock.unlock();
  return refuse(NakSyndrome::remote_access, Errc::remote_access,
                fmt::format("{} was deregistered here while it was being written; the rest of "
                            "the write was refused",
                            describe_incoming()));
}

uint8_t* FrameReceiver::payload_target() const noexcept {
  return in_.type == FrameType::write
             ? reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(in_.remote_addr))
             : place_;
}

bool FrameReceiver::write_target_valid() const noexcept {
  const Registry::Entry* e = registry_.find_remote_locked(in_.rkey);
  return e != nullptr && e->generation == in_generation_;
}

bool FrameReceiver::start_frame() noexcept {
  if (!in_.decode(rhdr_)) {
    in_.seq = 0;  // not a write: the NAK names none
    return refuse(NakSyndrome::invalid_request, Errc::protocol_error,
                  fmt::format("sent bytes that are not a valid frame header ({:02x}); the stream "
                              "is corrupt or the peer is not an rdmarepl TCP transport",
                              fmt::join(rhdr_, rhdr_ + 8, " ")));
  }
  switch (in_.type) {
    case FrameType::ack:
      if (!sq_.accept_ack(in_.seq, cq_)) {
        return fail(Errc::protocol_error,
                    fmt::format("acknowledged write seq {}, but only writes {}..{} are "
                                "unacknowledged on the wire; the peer is faulty, reconnect",
                                in_.seq, sq_.ack_floor() + 1, sq_.sent()),
                    0, WcStatus::flushed);
      }
      return true;
    case FrameType::nak: {
      const uint64_t wr_id = sq_.accept_nak(in_.seq, cq_);
      auto syndrome = static_cast<NakSyndrome>(in_.rkey);
      WcStatus st = status_of(syndrome);
      Errc code = syndrome == NakSyndrome::remote_access ? Errc::remote_access
                  : syndrome == NakSyndrome::not_ready   ? Errc::busy
                                                         : Errc::protocol_error;
      return fail(code,
                  fmt::format("refused our write seq {} (wr_id {}) with a TCP NAK: {}; {}", in_.seq,
                              wr_id, nak_text(syndrome), wc_status_advice(st)),
                  in_.seq, st);
    }
    case FrameType::read_response:
      return start_read_response();
    case FrameType::write:
    case FrameType::send:
    case FrameType::read_request:
      break;
  }
  if (in_.seq != recv_seq_ + 1) {
    return refuse(NakSyndrome::invalid_request, Errc::protocol_error,
                  fmt::format("sent {} but write seq {} was expected (a frame was lost or "
                              "injected)",
                              describe_incoming(), recv_seq_ + 1));
  }
  if (in_.type == FrameType::read_request) return start_read_request();
  if (rq_.empty()) {
    return refuse(NakSyndrome::not_ready, Errc::busy,
                  fmt::format("sent {} but no receive was posted here (receiver not ready); "
                              "post receives before the peer writes",
                              describe_incoming()));
  }
  if (in_.type == FrameType::send) return start_send_frame();
  if (in_.length == 0) {  // touches no memory: no region check (as on InfiniBand)
    finish_frame();
    return true;
  }
  return check_write_target();
}

bool FrameReceiver::check_write_target() noexcept {
  std::shared_lock lock(registry_.mutex());
  const Registry::Entry* e = registry_.find_remote_locked(in_.rkey);
  const char* violation = nullptr;
  if (e == nullptr)
    violation = "its rkey is not registered here (forged or stale key)";
  else if (!has(e->access, Access::remote_write))
    violation = "its region is not registered with remote write access";
  else if (!e->covers(static_cast<uintptr_t>(in_.remote_addr), in_.length))
    violation = "the range does not lie wholly inside the region of that rkey";
  else if (!granted(in_.rkey, in_.remote_addr, in_.length))
    violation =
        "the range does not lie wholly inside a region this connection advertised for that "
        "rkey";
  if (violation != nullptr) {
    std::string region = e == nullptr
                             ? std::string()
                             : fmt::format(" [0x{:x}, 0x{:x})", e->begin, e->begin + e->length);
    lock.unlock();
    return refuse(NakSyndrome::remote_access, Errc::remote_access,
                  fmt::format("sent {}: {}{}; nothing was written; re-exchange region descriptors",
                              describe_incoming(), violation, region));
  }
  in_generation_ = e->generation;
  in_done_ = 0;
  rstate_ = RecvState::payload;
  return true;
}

void FrameReceiver::finish_frame() noexcept {
  if (in_.type == FrameType::read_response) {
    sq_.complete_read(cq_);
    return;
  }
  recv_seq_ = in_.seq;
  uint64_t wr_id = rq_.oldest().wr_id;
  rq_.consume();
  const WcOpcode op = in_.type == FrameType::send ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
  const uint32_t imm = in_.type == FrameType::send ? 0 : in_.imm;
  cq_.push(Completion{wr_id, imm, in_.length, op, WcStatus::success});
  if ((in_.flags & kFlagAckRequested) != 0)
    acks_.requested(recv_seq_, in_.type == FrameType::write);
}

bool FrameReceiver::start_send_frame() noexcept {
  const RecvSlot& r = rq_.oldest();
  if (in_.length > r.length) {
    rq_.consume();
    cq_.push(Completion{r.wr_id, 0, 0, WcOpcode::recv, WcStatus::local_length_error});
    return refuse(NakSyndrome::invalid_request, Errc::protocol_error,
                  fmt::format("sent a message of {} bytes (seq {}) but the receive posted here "
                              "holds {} bytes; post receive buffers as large as the largest "
                              "message",
                              in_.length, in_.seq, r.length));
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

bool FrameReceiver::start_read_request() noexcept {
  recv_seq_ = in_.seq;
  if (in_.length > 0) {
    std::shared_lock lock(registry_.mutex());
    const Registry::Entry* e = registry_.find_remote_locked(in_.rkey);
    const char* violation = nullptr;
    if (e == nullptr)
      violation = "its rkey is not registered here (forged or stale key)";
    else if (!has(e->access, Access::remote_read))
      violation = "its region is not registered with remote read access";
    else if (!e->covers(static_cast<uintptr_t>(in_.remote_addr), in_.length))
      violation = "the range does not lie wholly inside the region of that rkey";
    if (violation != nullptr) {
      lock.unlock();
      return refuse(NakSyndrome::remote_access, Errc::remote_access,
                    fmt::format("asked to read {} bytes at 0x{:x} with rkey 0x{:08x} (seq {}): "
                                "{}; nothing was read; re-exchange region descriptors",
                                in_.length, in_.remote_addr, in_.rkey, in_.seq, violation));
    }
  }
  if (rsp_.full()) {
    return refuse(NakSyndrome::invalid_request, Errc::protocol_error,
                  fmt::format("had more than {} reads outstanding (seq {}); the peer is faulty",
                              kMaxReadsInFlight, in_.seq));
  }
  rsp_.push(reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(in_.remote_addr)), in_.length,
            in_.seq);
  return true;
}

bool FrameReceiver::start_read_response() noexcept {
  const uint64_t seq = in_.seq;
  if (!sq_.accept_read_response(seq, in_.length, cq_)) {
    return fail(Errc::protocol_error,
                fmt::format("sent a read response for seq {} ({} bytes) that answers no "
                            "outstanding read of ours in order; the peer is faulty, reconnect",
                            seq, in_.length),
                0, WcStatus::flushed);
  }
  place_ = sq_.slot(seq - 1).read_dst;
  if (in_.length == 0) {
    sq_.complete_read(cq_);
    return true;
  }
  in_done_ = 0;
  rstate_ = RecvState::payload;
  return true;
}

bool FrameReceiver::read_failed(ssize_t n) noexcept {
  // The peer is gone (EOF, reset or another error).
  const int err = n < 0 ? errno : 0;
  const size_t staged = st_tail_ - st_head_;
  std::string what;
  if (rstate_ == RecvState::payload) {
    what = fmt::format(
        "in the middle of {} ({} of {} payload bytes received; a truncated frame: "
        "no completion was delivered for it)",
        describe_incoming(), in_done_, in_.length);
  } else if (staged > 0) {
    what = fmt::format("in the middle of a frame header ({} of {} bytes; a truncated frame)",
                       staged, kFrameHeaderBytes);
  } else {
    what = "between frames";
  }
  const uint64_t outstanding = sq_.posted() - sq_.retired();
  return fail(Errc::connection_closed,
              fmt::format("{} {}; {} of our writes were unacknowledged; check the peer's "
                          "log and reconnect",
                          err == 0 ? std::string("closed the TCP connection (EOF)")
                                   : fmt::format("broke the TCP connection ({})", errno_text(err)),
                          what, outstanding),
              outstanding > 0 ? sq_.retired() + 1 : 0, WcStatus::retry_exceeded);
}

bool FrameReceiver::refuse(NakSyndrome syndrome, Errc code, std::string violation) noexcept {
  fault_ = ReceiveFault{true, syndrome, in_.seq, 0, WcStatus::flushed, code, std::move(violation)};
  return false;
}

bool FrameReceiver::fail(Errc code, std::string what, uint64_t failed_seq,
                         WcStatus status) noexcept {
  fault_ = ReceiveFault{false,          NakSyndrome::invalid_request, 0, failed_seq, status, code,
                        std::move(what)};
  return false;
}

std::string FrameReceiver::describe_incoming() const {
  return fmt::format("write seq {} ({} bytes to 0x{:x} with rkey 0x{:08x}, imm {})", in_.seq,
                     in_.length, in_.remote_addr, in_.rkey, in_.imm);
}

}  // namespace rdmarepl::transport::tcp
