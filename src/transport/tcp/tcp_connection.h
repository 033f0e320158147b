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
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "frame.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/transport.h"
#include "registry.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::tcp {

class TcpConnection final : public Connection {
 public:
  // Limits of ConnectionOptions::send_queue_depth / recv_queue_depth.
  static constexpr uint32_t kMaxQueueDepth = 1u << 16;

  TcpConnection(bootstrap::Fd fd, std::shared_ptr<const Registry> registry, PeerInfo peer,
                uint32_t send_queue_depth, uint32_t recv_queue_depth);
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
  enum class Kind : uint8_t { write, send, read };
  struct SendSlot {
    Kind kind = Kind::write;
    uint64_t wr_id = 0;
    uint8_t* read_dst = nullptr;    // reads: where the response's bytes go
    uint32_t wire_length = 0;       // payload bytes on the wire (0 for a read request)
    const uint8_t* data = nullptr;  // the first segment (for messages)
    uint32_t length = 0;            // payload bytes: every segment
    uint32_t lkey = 0;
    uint8_t n_seg = 0;  // gathered segments of the payload, in order
    LocalSegment seg[kMaxWriteSegments] = {};
    bool signaled = false;
    bool bad_lkey = false;  // fails with local_protection_error when it reaches the wire
    uint8_t header[kFrameHeaderBytes] = {};
  };
  // A posted receive: zero-length (post_recvs) or with a buffer (post_recv_buffers).
  struct RecvSlot {
    uint64_t wr_id = 0;
    uint8_t* addr = nullptr;
    uint32_t length = 0;
  };
  // A read response this side owes the peer (responder of its reads).
  struct ReadResponse {
    const uint8_t* data = nullptr;
    uint32_t length = 0;
    uint8_t header[kFrameHeaderBytes] = {};
  };
  // What a gathered iovec belongs to, so that a partial send can be accounted.
  enum class Part : uint8_t { control, data, response };
  struct IovOwner {
    Part part = Part::data;
    uint32_t bytes = 0;
  };
  enum class RecvState : uint8_t { header, payload };
  // What the last readiness check said of the socket; the next poll() reads it unless
  // poll(2) reported it empty (not_readable), then forgets.
  enum class RecvHint : uint8_t { unknown, not_readable };

  static constexpr int kMaxIov = 64 + kMaxWriteSegments;  // iovecs per sendmsg (IOV_MAX is 1024)
  // Bytes read per poll() before returning to the caller, so one busy connection cannot
  // starve the completions of another polled by the same thread.
  static constexpr size_t kRecvBudgetBytes = 8u << 20;
  // Staging buffer of incoming bytes: one read takes every small frame the socket holds
  // (headers, acks, messages); payloads are copied from it into place, and the rest of a
  // payload larger than what it holds is read straight into place.
  static constexpr size_t kStageBytes = 16u << 10;

  SendSlot& slot(uint64_t index) noexcept { return sq_[index % sq_.size()]; }
  // The checks every post_*() makes before it queues anything, in this order: the
  // connection is up, the requests fit in the send queue, each is well formed. ok means go
  // on (with no requests: nothing to do).
  template <class Request>
  [[nodiscard]] PostStatus admit(std::span<const Request> requests) const noexcept {
    if (!healthy()) return PostStatus::disconnected;
    if (requests.empty()) return PostStatus::ok;
    if (requests.size() > sq_.size() - send_in_use()) return PostStatus::queue_full;
    for (const Request& r : requests)
      if (!r.well_formed()) return PostStatus::invalid;
    return PostStatus::ok;
  }
  [[nodiscard]] uint64_t send_in_use() const noexcept {
    return (sq_posted_ - sq_retired_) + send_cq_pending_;
  }

  void progress_send() noexcept;
  void progress_recv() noexcept;
  // Parses and places what the staging buffer holds; false when the connection failed.
  bool drain_stage() noexcept;
  // Copies staged payload bytes into the incoming frame's target; false when it failed.
  bool place_staged(size_t take) noexcept;
  // The target of the incoming frame's payload.
  [[nodiscard]] uint8_t* payload_target() const noexcept;
  // Whether the incoming write's region is still the one checked at its header (the
  // caller holds the registry's shared lock).
  [[nodiscard]] bool write_target_valid() const noexcept;
  void refuse_deregistered() noexcept;
  // For an incoming write: takes `lock` (the registry's, deferred) and re-checks the target,
  // so that a region deregistered meanwhile is never written to; false (the write refused,
  // the lock released) when it was. Other frames land in buffers this side posted: true.
  bool lock_write_target(std::shared_lock<std::shared_mutex>& lock) noexcept;
  // The socket read `n` (0: EOF, < 0: errno): fails the connection naming where it broke.
  void fail_on_read_error(ssize_t n) noexcept;
  // Whether anything but a deferred acknowledgement waits to be sent.
  [[nodiscard]] bool data_pending() const noexcept {
    return sq_sent_ < sq_posted_ || rsp_head_ < rsp_tail_;
  }
  // Queues the acknowledgement the peer asked for (at most one per poll()): at once when a
  // write asked, deferred to the next outgoing frame or call when only Sends did.
  void queue_ack() noexcept;
  void push_completion(const Completion& c) noexcept;
  void retire_acked(uint64_t acked_seq) noexcept;
  bool start_frame() noexcept;  // header complete: check it; false when the conn failed
  void finish_frame() noexcept;
  bool start_send_frame() noexcept;     // the oldest receive takes the payload
  bool start_read_request() noexcept;   // queue the response
  bool start_read_response() noexcept;  // the oldest outstanding read takes it
  bool check_write_target() noexcept;   // rkey, access and range of a write
  void complete_read() noexcept;
  // Adds a request of `kind` to the send queue (room checked by the caller).
  void push_slot(Kind kind, uint64_t wr_id, const WriteRequest& r, uint8_t* read_dst) noexcept;
  // Gathers what is due on the wire into iov_; returns how many iovecs.
  int gather(size_t& total) noexcept;
  void account_sent(int n_iov, size_t sent) noexcept;
  void queue_control(FrameType type, uint64_t seq, uint32_t syndrome) noexcept;
  // Moves to the error state: `failed_slot` (if any, by sequence number) completes with
  // `status`, every other outstanding request and posted receive with `flushed`.
  void fail(Error why, uint64_t failed_seq, WcStatus status) noexcept;
  // The responder's side of a refused write: NAK, error naming the peer and the violation.
  void refuse(NakSyndrome syndrome, Errc code, std::string violation) noexcept;
  void flush_control_briefly() noexcept;
  // Fills the slot's payload segments from `r`; false when one is not covered by its lkey.
  bool load_segments(SendSlot& s, const WriteRequest& r) const noexcept;
  // Sends the rest of a slot's payload from `payload_off` (blocking, bounded): refuse().
  bool send_payload_blocking(const SendSlot& s, size_t payload_off, Deadline deadline) noexcept;
  std::string describe_incoming() const;

  bootstrap::Fd fd_;
  std::shared_ptr<const Registry> registry_;
  PeerInfo peer_;
  std::string peer_name_;  // "node 'x' at host:port", for messages

  std::atomic<bool> healthy_{true};
  Error error_;

  // Send queue: slots [sq_retired_, sq_posted_) are outstanding; slot index i carries the
  // write with sequence number i + 1. sq_sent_ frames are wholly on the wire; sq_offset_
  // bytes of the next one are.
  std::vector<SendSlot> sq_;
  uint64_t sq_posted_ = 0;
  uint64_t sq_retired_ = 0;
  uint64_t sq_sent_ = 0;
  size_t sq_offset_ = 0;
  uint64_t send_cq_pending_ = 0;
  uint32_t ack_interval_ = 1;  // also ask for an ack every this many writes

  // One pending control frame (ack or nak) sent between data frames.
  uint8_t ctl_[kFrameHeaderBytes] = {};
  size_t ctl_offset_ = 0;
  bool ctl_pending_ = false;
  bool nak_queued_ = false;  // after a NAK nothing else is sent
  uint64_t ack_wanted_ = 0;  // highest placed seq the requester asked us to acknowledge
  uint64_t ack_sent_ = 0;
  bool ack_urgent_ = false;   // a write asked for ack_wanted_: no deferral
  bool ctl_lazy_ = false;     // the pending control frame is a deferred ack
  bool posts_sends_ = false;  // this side posted a Send: acks of the peer's Sends may wait

  // Receive queue of posted receives.
  std::vector<RecvSlot> rq_;
  uint64_t rq_posted_ = 0;
  uint64_t rq_consumed_ = 0;
  uint64_t recv_cq_pending_ = 0;

  // Incoming frame state. Bytes read but not yet parsed or placed are stage_[st_head_,
  // st_tail_).
  RecvState rstate_ = RecvState::header;
  RecvHint recv_hint_ = RecvHint::unknown;
  uint8_t rhdr_[kFrameHeaderBytes] = {};  // the header being handled
  std::vector<uint8_t> stage_;
  size_t st_head_ = 0;
  size_t st_tail_ = 0;
  FrameHeader in_;
  uint64_t in_generation_ = 0;  // registration being written into
  size_t in_done_ = 0;          // payload bytes placed
  uint64_t recv_seq_ = 0;       // last write placed
  uint8_t* place_ = nullptr;    // send / read response: where its payload goes

  // RDMA Reads. Requester: read frames on the wire not yet answered; acks received while
  // the oldest outstanding request was an unanswered read (they retire what follows it once
  // it is answered). Responder: the responses owed, in request order.
  uint32_t reads_on_wire_ = 0;
  uint64_t ack_pending_ = 0;
  uint64_t ack_floor_ = 0;  // highest ack received: acks never go backwards
  std::vector<ReadResponse> rsp_;
  uint64_t rsp_head_ = 0;
  uint64_t rsp_tail_ = 0;
  size_t rsp_offset_ = 0;  // bytes of the head response on the wire

  // Completion queue (ring); capacity at least send + receive depth (see send_in_use()),
  // more when the QP manager resizes it (resize_completions()).
  std::vector<Completion> cq_;
  uint64_t cq_head_ = 0;
  uint64_t cq_tail_ = 0;

  std::vector<iovec> iov_;
  std::vector<IovOwner> iov_owner_;
};

}  // namespace rdmarepl::transport::tcp
