// One TCP transport connection (the counterpart of an RC queue pair). Private to the TCP
// transport; users see it as a transport::Connection. Design and checks: docs/transport.md.
//
// Progress is made by the owner's calls: post_writes() tries to send at once, poll() sends
// what is left, reads incoming frames (as many as the socket holds, into a staging buffer)
// and places them, sends acknowledgements and reaps completions; wait() blocks in poll(2)
// on the socket. An acknowledgement that only Sends asked for waits for the next outgoing
// frame or the next call (docs/transport.md, "Acknowledgements"). There is no internal thread, so
// the bytes are moved by the thread that owns the connection and no completion crosses threads.
// Every queue is allocated when the connection is built: the data path neither allocates
// nor throws.
//
// The connection owns the socket, the error state and the completion ring, and composes the
// parts that do the work (each file says what it owns and its invariants):
//   SendQueue      posted writes, Sends and read requests until they retire (send_queue.h)
//   RecvQueue      posted receives, zero-length or with buffers (recv_queue.h)
//   OutgoingAcks   the acknowledgement owed to the peer and its control frame
//   ReadResponses  the responses owed to the peer's RDMA Reads
//   FrameSender    the outgoing stream: gathering frames, sendmsg(), partial sends
//   FrameReceiver  the incoming stream: staging, header checks, placement, dispatch
// The parts never fail the connection themselves: they report (FrameSender::Outcome,
// ReceiveFault) and the connection moves to the error state, so that every completion of
// the flush is produced in one place (fail()). No part is reached through a virtual call.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "completion_ring.h"
#include "frame_receiver.h"
#include "frame_sender.h"
#include "outgoing_acks.h"
#include "rdmarepl/transport/transport.h"
#include "read_responses.h"
#include "recv_queue.h"
#include "registry.h"
#include "send_queue.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::tcp {

class TcpConnection final : public Connection {
 public:
  // Limits of ConnectionOptions::send_queue_depth / recv_queue_depth.
  static constexpr uint32_t kMaxQueueDepth = 1u << 16;

  // `granted`: the regions this side advertised (ConnectionOptions::regions), which bound
  // the peer's one-sided writes (FrameReceiver).
  TcpConnection(bootstrap::Fd fd, std::shared_ptr<const Registry> registry, PeerInfo peer,
                std::vector<RemoteRegion> granted, uint32_t send_queue_depth,
                uint32_t recv_queue_depth);
  ~TcpConnection() override;

  PostStatus post_writes(std::span<const WriteRequest> requests) noexcept override;
  PostStatus post_recvs(uint32_t count, uint64_t first_wr_id) noexcept override;
  PostStatus post_sends(std::span<const SendRequest> requests) noexcept override;
  PostStatus post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept override;
  PostStatus post_reads(std::span<const ReadRequest> requests) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;
  // Resizes the completion ring (never below send + receive depth: what can be queued),
  // keeping the completions queued in it, in order.
  Result<bool> resize_completions(uint32_t entries) override;
  [[nodiscard]] uint32_t completion_entries() const noexcept override {
    return static_cast<uint32_t>(cq_.size());
  }
  Status wait(std::chrono::milliseconds timeout) override;
  // Sends a deferred acknowledgement first: the caller is about to block.
  int readiness(std::span<pollfd> out) noexcept override;
  // Remembers whether poll(2) found the socket readable: the next poll() reads only then.
  void consume_readiness(std::span<const pollfd> fds) noexcept override;
  [[nodiscard]] bool healthy() const noexcept override {
    return healthy_.load(std::memory_order_acquire);
  }
  [[nodiscard]] Error error() const override;
  [[nodiscard]] const PeerInfo& peer() const noexcept override { return peer_; }
  void close() noexcept override;

 private:
  // What the last readiness check said of the socket; the next poll() reads it unless
  // poll(2) reported it empty (not_readable), then forgets.
  enum class RecvHint : uint8_t { unknown, not_readable };

  // The checks every post_*() makes before it queues anything, in this order: the
  // connection is up, the requests fit in the send queue, each is well formed. ok means go
  // on (with no requests: nothing to do).
  template <class Request>
  [[nodiscard]] PostStatus admit(std::span<const Request> requests) const noexcept {
    if (!healthy()) return PostStatus::disconnected;
    if (requests.empty()) return PostStatus::ok;
    if (requests.size() > sq_.depth() - sq_.in_use(cq_)) return PostStatus::queue_full;
    for (const Request& r : requests)
      if (!r.well_formed()) return PostStatus::invalid;
    return PostStatus::ok;
  }

  // Sends what is due; fails the connection on a bad lkey or a broken socket.
  void progress_send() noexcept;
  // Acts on what the receiver reported: the NAK it asked for, then the error state.
  void fail_on_receive() noexcept;
  // Moves to the error state: `failed_seq` (if any, by sequence number) completes with
  // `status`, every other outstanding request and posted receive with `flushed`.
  void fail(Error why, uint64_t failed_seq, WcStatus status) noexcept;

  bootstrap::Fd fd_;
  std::shared_ptr<const Registry> registry_;
  PeerInfo peer_;
  std::string peer_name_;  // "node 'x' at host:port", for messages

  std::atomic<bool> healthy_{true};
  Error error_;
  RecvHint recv_hint_ = RecvHint::unknown;

  // Completion queue (ring); capacity at least send + receive depth (see
  // SendQueue::in_use()), more when the QP manager resizes it (resize_completions()).
  CompletionRing cq_;
  SendQueue sq_;
  RecvQueue rq_;
  OutgoingAcks acks_;
  ReadResponses rsp_;
  // Declared after the parts they refer to: built after them, destroyed before them.
  FrameSender tx_;
  FrameReceiver rx_;
};

}  // namespace rdmarepl::transport::tcp
