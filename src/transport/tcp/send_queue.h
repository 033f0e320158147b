// The send queue of one TCP connection (requester side): the writes, Sends and RDMA Read
// requests this side posted, from post_*() until they retire, and how far the outgoing
// stream has carried them (docs/transport.md, "Sending" and "Acknowledgements").
//
// Invariants:
// - Slots [retired(), posted()) are outstanding; slot index i carries the request with
//   sequence number i + 1 (writes, Sends and reads share one sequence). sent() frames are
//   wholly on the wire and offset() bytes of the next one are; retired() <= sent() <=
//   posted().
// - A slot is in use from its post until it is retired and, when it produces a completion,
//   until that completion is reaped (in_use()), which keeps the CompletionRing from
//   overflowing.
// - Requests retire in order. An acknowledgement retires every write and Send up to its
//   seq, but stops at an unanswered read: the read completes with its response, then what
//   the acknowledgement covered after it retires. Acknowledgements never go backwards.
// - At most kMaxReadsInFlight read requests are on the wire unanswered (FrameSender holds
//   later ones back), the number the responder keeps responses for.
// Slots are allocated when the connection is built: posting neither allocates nor throws.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "completion_ring.h"
#include "frame.h"
#include "rdmarepl/transport/types.h"
#include "registry.h"

namespace rdmarepl::transport::tcp {

enum class SendKind : uint8_t { write, send, read };

struct SendSlot {
  SendKind kind = SendKind::write;
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

class SendQueue {
 public:
  explicit SendQueue(uint32_t depth) : sq_(depth), ack_interval_(std::max(1u, depth / 2)) {}

  [[nodiscard]] size_t depth() const noexcept { return sq_.size(); }
  // Slots in use: outstanding, or retired with a completion not yet reaped.
  [[nodiscard]] uint64_t in_use(const CompletionRing& cq) const noexcept {
    return (posted_ - retired_) + cq.send_pending();
  }
  [[nodiscard]] SendSlot& slot(uint64_t index) noexcept { return sq_[index % sq_.size()]; }
  [[nodiscard]] const SendSlot& slot(uint64_t index) const noexcept {
    return sq_[index % sq_.size()];
  }

  // Adds a request of `kind` (room checked by the caller) and encodes its frame header.
  // A segment not covered by its lkey in `registry` marks the slot bad_lkey.
  void push(SendKind kind, uint64_t wr_id, const WriteRequest& r, uint8_t* read_dst,
            const Registry& registry) noexcept {
    SendSlot& s = slot(posted_);
    uint64_t seq = posted_ + 1;
    s.kind = kind;
    s.wr_id = wr_id;
    s.read_dst = read_dst;
    s.data = static_cast<const uint8_t*>(r.local_addr);
    s.length = static_cast<uint32_t>(r.total_length());
    s.signaled = r.signaled;
    s.lkey = r.lkey;
    s.bad_lkey = !load_segments(s, r, registry);
    if (kind == SendKind::read) s.n_seg = 0;  // the request carries no payload
    s.wire_length = kind == SendKind::read ? 0 : s.length;
    FrameHeader h;
    h.type = kind == SendKind::write  ? FrameType::write
             : kind == SendKind::send ? FrameType::send
                                      : FrameType::read_request;
    const bool ack = kind != SendKind::read && (r.signaled || seq % ack_interval_ == 0);
    h.flags = ack ? kFlagAckRequested : 0;
    h.length = s.length;
    h.remote_addr = r.remote_addr;
    h.rkey = r.rkey;
    h.imm = r.imm;
    h.seq = seq;
    h.encode(s.header);
    ++posted_;
  }

  [[nodiscard]] uint64_t posted() const noexcept { return posted_; }
  [[nodiscard]] uint64_t sent() const noexcept { return sent_; }
  [[nodiscard]] size_t offset() const noexcept { return offset_; }
  [[nodiscard]] uint64_t retired() const noexcept { return retired_; }
  [[nodiscard]] uint32_t reads_on_wire() const noexcept { return reads_on_wire_; }
  // `bytes` more of the frame at sent() went on the wire.
  void advance(size_t bytes) noexcept {
    if (offset_ == 0 && bytes > 0 && slot(sent_).kind == SendKind::read) ++reads_on_wire_;
    offset_ += bytes;
    if (offset_ == kFrameHeaderBytes + slot(sent_).wire_length) {
      ++sent_;
      offset_ = 0;
    }
  }

  // An ack frame of the peer: every write and Send up to `seq` is placed. False (nothing
  // changed) when `seq` is below an earlier ack or above what is on the wire.
  bool accept_ack(uint64_t seq, CompletionRing& cq) noexcept {
    if (seq < ack_floor_ || seq > sent_) return false;
    ack_floor_ = seq;
    retire_acked(seq, cq);
    return true;
  }
  // The highest ack received (acks never go backwards).
  [[nodiscard]] uint64_t ack_floor() const noexcept { return ack_floor_; }
  // A NAK of the peer naming `seq`: retires what it acknowledges and returns the named
  // request's wr_id (0 when it names none of ours).
  uint64_t accept_nak(uint64_t seq, CompletionRing& cq) noexcept;
  // A read response for `seq` of `length` bytes: retires what it acknowledges; false when
  // it answers no outstanding read of ours in order. Its bytes go to slot(seq - 1).read_dst.
  bool accept_read_response(uint64_t seq, uint32_t length, CompletionRing& cq) noexcept;
  // The response of the oldest outstanding request (a read) is placed: it completes, then
  // what acknowledgements covered after it retires.
  void complete_read(CompletionRing& cq) noexcept {
    const SendSlot& s = slot(retired_);
    cq.push(Completion{s.wr_id, 0, s.length, WcOpcode::rdma_read, WcStatus::success});
    ++retired_;
    if (reads_on_wire_ > 0) --reads_on_wire_;
    retire_acked(ack_pending_, cq);
  }

  // The error state: the request with sequence number `failed_seq` (if any) completes with
  // `status`, every other outstanding one with `flushed`; nothing more goes on the wire.
  void flush(uint64_t failed_seq, WcStatus status, CompletionRing& cq) noexcept;

 private:
  // Fills the slot's payload segments from `r`; false when one is not covered by its lkey.
  static bool load_segments(SendSlot& s, const WriteRequest& r, const Registry& registry) noexcept {
    bool ok = true;
    s.n_seg = 0;
    for (size_t i = 0; i < r.segment_count(); ++i) {
      LocalSegment g = r.segment(i);
      if (g.length == 0) continue;
      if (!registry.check_local(g.lkey, g.addr, g.length)) {
        ok = false;
        s.data = static_cast<const uint8_t*>(g.addr);  // name the bad segment in the error
        s.lkey = g.lkey;
      }
      s.seg[s.n_seg++] = g;
    }
    return ok;
  }

  void retire_acked(uint64_t acked_seq, CompletionRing& cq) noexcept {
    while (retired_ < acked_seq) {
      const SendSlot& s = slot(retired_);
      if (s.kind == SendKind::read) {  // completes with its response, then the rest retires
        ack_pending_ = std::max(ack_pending_, acked_seq);
        return;
      }
      if (s.signaled) {
        const WcOpcode op = s.kind == SendKind::send ? WcOpcode::send : WcOpcode::rdma_write;
        cq.push(Completion{s.wr_id, 0, s.length, op, WcStatus::success});
      }
      ++retired_;
    }
  }

  std::vector<SendSlot> sq_;
  uint64_t posted_ = 0;
  uint64_t retired_ = 0;
  uint64_t sent_ = 0;
  size_t offset_ = 0;
  uint32_t ack_interval_ = 1;  // also ask for an ack every this many writes

  // Read frames on the wire not yet answered; acks received while the oldest outstanding
  // request was an unanswered read (they retire what follows it once it is answered).
  uint32_t reads_on_wire_ = 0;
  uint64_t ack_pending_ = 0;
  uint64_t ack_floor_ = 0;  // highest ack received: acks never go backwards
};

}  // namespace rdmarepl::transport::tcp
