// The outgoing byte stream of one TCP connection: it interleaves the three kinds of frames
// this side sends (the send queue's requests, the pending acknowledgement, the read
// responses it owes) into one socket, with sendmsg() gathering iovecs straight from the
// registered buffers, no copy (docs/transport.md, "Sending").
//
// It owns only the iovec arrays (allocated when the connection is built); the frames and
// how far each is on the wire stay with SendQueue, OutgoingAcks and ReadResponses, which it
// advances byte by byte as the socket takes them. Invariants of the stream:
// - It is cut at one point at most: a partial send leaves one frame partly on the wire, and
//   that frame is finished first.
// - A control frame goes on the wire only between whole frames; after a NAK nothing else is
//   sent (the connection fails).
// - A request with a bad lkey is not sent: progress() stops in front of it, after the
//   requests posted before it, and reports it.
// It never fails the connection itself: it reports, and TcpConnection decides.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "frame.h"
#include "outgoing_acks.h"
#include "rdmarepl/core/clock.h"
#include "read_responses.h"
#include "send_queue.h"

namespace rdmarepl::transport::tcp {

class FrameSender {
 public:
  enum class Outcome : uint8_t {
    idle,      // nothing is left to send, or the socket buffer is full
    bad_lkey,  // the request at SendQueue::sent() is not covered by its lkey
    broken,    // sendmsg() failed: the connection is broken
  };

  FrameSender(SendQueue& sq, OutgoingAcks& acks, ReadResponses& rsp);

  // Sends what is due on socket `fd` until the socket is full or nothing is left; on
  // `broken`, `err` is sendmsg()'s errno.
  Outcome progress(int fd, int& err) noexcept;
  // Whether anything but a deferred acknowledgement waits to be sent.
  [[nodiscard]] bool data_pending() const noexcept {
    return sq_.sent() < sq_.posted() || rsp_.pending();
  }
  // Whether bytes wait for room in the socket (poll it for writing).
  [[nodiscard]] bool wants_writable() const noexcept { return data_pending() || acks_.pending(); }
  // Error and close paths: sends a pending control frame (bounded wait), unless the stream
  // is cut in the middle of another frame.
  void flush_control_briefly(int fd) noexcept;
  // The responder's side of a refused request: finishes what is half on the wire (a
  // control frame or a data frame whose buffer is still ours to read), then sends a NAK of
  // `seq` with `syndrome`; bounded wait. The caller fails the connection next.
  void send_nak(int fd, NakSyndrome syndrome, uint64_t seq) noexcept;

 private:
  // What a gathered iovec belongs to, so that a partial send can be accounted.
  enum class Part : uint8_t { control, data, response };
  struct IovOwner {
    Part part = Part::data;
    uint32_t bytes = 0;
  };
  static constexpr int kMaxIov = 64 + kMaxWriteSegments;  // iovecs per sendmsg (IOV_MAX is 1024)

  // Gathers what is due on the wire into iov_; returns how many iovecs.
  int gather(size_t& total) noexcept;
  void account_sent(int n_iov, size_t sent) noexcept;
  // Sends the rest of a slot's payload from `payload_off` (blocking, bounded): send_nak().
  static bool send_payload_blocking(int fd, const SendSlot& s, size_t payload_off,
                                    Deadline deadline) noexcept;

  SendQueue& sq_;
  OutgoingAcks& acks_;
  ReadResponses& rsp_;
  std::vector<iovec> iov_;
  std::vector<IovOwner> iov_owner_;
};

}  // namespace rdmarepl::transport::tcp
