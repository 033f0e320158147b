// The incoming byte stream of one TCP connection: reading the socket into a staging buffer
// (or a large payload straight into place), parsing and checking each frame header, and
// handing each frame to the part it belongs to: write and Send payloads into registered
// memory and posted receives, acks and NAKs to the send queue, read requests to the read
// responses owed, read responses into the reads' local buffers (docs/transport.md,
// "Receiving and placement checks"; docs/wire_format.md, "TCP transport frames").
//
// Invariants:
// - Every check of a frame header (magic, type, flags, the next sequence number, a posted
//   receive, the target region's rkey, access and range) passes before any payload byte is
//   placed in memory; bytes may sit in the staging buffer, never in a region.
// - A write's payload is placed under the registry's shared lock, re-checking before each
//   copy and each read that the region is still the one checked at its header, so a region
//   deregistered meanwhile is never written to.
// - Bytes read but not yet parsed or placed are stage_[st_head_, st_tail_); in the payload
//   state the staging buffer is drained before the socket is read again.
// It never fails the connection itself: on a frame it must refuse, or a broken stream, it
// records a ReceiveFault and returns false, and TcpConnection sends the NAK and fails. The
// staging buffer is allocated when the connection is built.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "completion_ring.h"
#include "frame.h"
#include "outgoing_acks.h"
#include "rdmarepl/core/error.h"
#include "read_responses.h"
#include "recv_queue.h"
#include "registry.h"
#include "send_queue.h"

namespace rdmarepl::transport::tcp {

// Why the incoming stream stopped, for the connection to act on: refuse the peer's request
// (NAK it, then fail) or fail. Built only on those paths (its message allocates then).
struct ReceiveFault {
  bool refuse = false;
  NakSyndrome syndrome = NakSyndrome::invalid_request;  // refuse: the NAK's syndrome
  uint64_t nak_seq = 0;                                 // refuse: the request the NAK names
  uint64_t failed_seq = 0;  // fail: this request of ours completes with `status`
  WcStatus status = WcStatus::flushed;
  Errc code = Errc::protocol_error;
  std::string what;  // what the peer did or what broke, after the peer's name
};

class FrameReceiver {
 public:
  // `granted`: the regions this side advertised to the peer in the handshake. When there
  // are any, a one-sided write must lie wholly inside one of them (with its rkey), not just
  // inside a registration: a peer cannot write past the ring it was given into the rest of
  // the arena. With none, the registration bounds it.
  FrameReceiver(const Registry& registry, std::vector<RemoteRegion> granted, SendQueue& sq,
                RecvQueue& rq, ReadResponses& rsp, OutgoingAcks& acks, CompletionRing& cq);

  // Reads what socket `fd` holds (at most kRecvBudgetBytes) and handles every whole frame
  // header and payload byte of it. False when the connection must fail: fault() says why.
  // Only called while the connection is healthy.
  bool progress(int fd) noexcept;
  // Why the last progress() returned false.
  [[nodiscard]] ReceiveFault& fault() noexcept { return fault_; }

 private:
  enum class RecvState : uint8_t { header, payload };

  // Whether [addr, addr + len) with `rkey` lies inside a granted region (or none was).
  [[nodiscard]] bool granted(uint32_t rkey, uint64_t addr, uint64_t len) const noexcept;

  // Bytes read per poll() before returning to the caller, so one busy connection cannot
  // starve the completions of another polled by the same thread.
  static constexpr size_t kRecvBudgetBytes = 8u << 20;
  // Staging buffer of incoming bytes: one read takes every small frame the socket holds
  // (headers, acks, messages); payloads are copied from it into place, and the rest of a
  // payload larger than what it holds is read straight into place.
  static constexpr size_t kStageBytes = 16u << 10;

  // Parses and places what the staging buffer holds; false when the connection must fail.
  bool drain_stage() noexcept;
  // Copies staged payload bytes into the incoming frame's target; false when it failed.
  bool place_staged(size_t take) noexcept;
  // The target of the incoming frame's payload.
  [[nodiscard]] uint8_t* payload_target() const noexcept;
  // Whether the incoming write's region is still the one checked at its header (the
  // caller holds the registry's shared lock).
  [[nodiscard]] bool write_target_valid() const noexcept;
  // For an incoming write: takes `lock` (the registry's, deferred) and re-checks the target,
  // so that a region deregistered meanwhile is never written to; false (the write refused,
  // the lock released) when it was. Other frames land in buffers this side posted: true.
  bool lock_write_target(std::shared_lock<std::shared_mutex>& lock) noexcept;
  bool start_frame() noexcept;  // header complete: check it; false when the conn must fail
  void finish_frame() noexcept;
  bool start_send_frame() noexcept;     // the oldest receive takes the payload
  bool start_read_request() noexcept;   // queue the response
  bool start_read_response() noexcept;  // the oldest outstanding read takes it
  bool check_write_target() noexcept;   // rkey, access and range of a write
  // The socket read `n` (0: EOF, < 0: errno): records the failure naming where it broke.
  bool read_failed(ssize_t n) noexcept;
  // Records a refusal of the incoming request (NAK `syndrome`, error `code`); false.
  bool refuse(NakSyndrome syndrome, Errc code, std::string violation) noexcept;
  // Records a failure: our request `failed_seq` (if any) completes with `status`; false.
  bool fail(Errc code, std::string what, uint64_t failed_seq, WcStatus status) noexcept;
  [[nodiscard]] std::string describe_incoming() const;

  const Registry& registry_;
  std::vector<RemoteRegion> granted_;
  SendQueue& sq_;
  RecvQueue& rq_;
  ReadResponses& rsp_;
  OutgoingAcks& acks_;
  CompletionRing& cq_;

  // Incoming frame state. Bytes read but not yet parsed or placed are stage_[st_head_,
  // st_tail_).
  RecvState rstate_ = RecvState::header;
  uint8_t rhdr_[kFrameHeaderBytes] = {};  // the header being handled
  std::vector<uint8_t> stage_;
  size_t st_head_ = 0;
  size_t st_tail_ = 0;
  FrameHeader in_;
  uint64_t in_generation_ = 0;  // registration being written into
  size_t in_done_ = 0;          // payload bytes placed
  uint64_t recv_seq_ = 0;       // last write placed
  uint8_t* place_ = nullptr;    // send / read response: where its payload goes

  ReceiveFault fault_;
};

}  // namespace rdmarepl::transport::tcp
