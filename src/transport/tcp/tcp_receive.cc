// Receiving on the TCP transport: reading the socket into the staging buffer (or a large
// payload straight into place), parsing frames and placing their payloads
// (docs/transport.md, "Receiving and placement checks").
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tcp_connection.h"

namespace rdmarepl::transport::tcp {

void TcpConnection::progress_recv() noexcept {
  size_t budget = kRecvBudgetBytes;
  while (budget > 0) {
    if (!drain_stage()) return;
    ssize_t n = 0;
    size_t want = 0;
    if (rstate_ == RecvState::payload) {
      // The stage is empty: the rest of the payload goes straight into place and what
      // follows it into the stage, in one call (a write under the registry's lock).
      std::shared_lock lock(registry_->mutex(), std::defer_lock);
      if (!lock_write_target(lock)) return;
      const size_t rest = in_.length - in_done_;
      iovec v[2] = {{payload_target() + in_done_, rest}, {stage_.data(), stage_.size()}};
      want = rest + stage_.size();
      n = ::readv(fd_.get(), v, 2);
      if (n > 0) {
        const size_t placed = std::min(static_cast<size_t>(n), rest);
        in_done_ += placed;
        st_tail_ = static_cast<size_t>(n) - placed;
      }
    } else {
      want = stage_.size() - st_tail_;
      n = ::recv(fd_.get(), stage_.data() + st_tail_, want, MSG_DONTWAIT);
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
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fail_on_read_error(n);
    return;
  }
  (void)drain_stage();
}

bool TcpConnection::drain_stage() noexcept {
  while (healthy()) {
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
  if (!healthy()) return false;
  // What is left is part of a header (or nothing): move it to the front.
  const size_t left = st_tail_ - st_head_;
  if (left > 0 && st_head_ > 0) std::memmove(stage_.data(), stage_.data() + st_head_, left);
  st_head_ = 0;
  st_tail_ = left;
  return true;
}

bool TcpConnection::place_staged(size_t take) noexcept {
  std::shared_lock lock(registry_->mutex(), std::defer_lock);
  if (!lock_write_target(lock)) return false;
  std::memcpy(payload_target() + in_done_, stage_.data() + st_head_, take);
  st_head_ += take;
  in_done_ += take;
  return true;
}

bool TcpConnection::lock_write_target(std::shared_lock<std::shared_mutex>& lock) noexcept {
  if (in_.type != FrameType::write) return true;
  lock.lock();
  if (write_target_valid()) return true;
  lock.unlock();
  refuse_deregistered();
  return false;
}

uint8_t* TcpConnection::payload_target() const noexcept {
  return in_.type == FrameType::write
             ? reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(in_.remote_addr))
             : place_;
}

bool TcpConnection::write_target_valid() const noexcept {
  const Registry::Entry* e = registry_->find_remote_locked(in_.rkey);
  return e != nullptr && e->generation == in_generation_;
}

void TcpConnection::refuse_deregistered() noexcept {
  refuse(NakSyndrome::remote_access, Errc::remote_access,
         fmt::format("{} was deregistered here while it was being written; the rest of "
                     "the write was refused",
                     describe_incoming()));
}

void TcpConnection::fail_on_read_error(ssize_t n) noexcept {
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
  const uint64_t outstanding = sq_posted_ - sq_retired_;
  fail(Error(Errc::connection_closed,
             fmt::format("{} {} {}; {} of our writes were unacknowledged; check the peer's "
                         "log and reconnect",
                         peer_name_,
                         err == 0 ? std::string("closed the TCP connection (EOF)")
                                  : fmt::format("broke the TCP connection ({})", errno_text(err)),
                         what, outstanding)),
       outstanding > 0 ? sq_retired_ + 1 : 0, WcStatus::retry_exceeded);
}

std::string TcpConnection::describe_incoming() const {
  return fmt::format("write seq {} ({} bytes to 0x{:x} with rkey 0x{:08x}, imm {})", in_.seq,
                     in_.length, in_.remote_addr, in_.rkey, in_.imm);
}

}  // namespace rdmarepl::transport::tcp
