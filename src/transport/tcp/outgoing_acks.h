// The acknowledgements one TCP connection owes its peer as responder, and the one control
// frame that carries them (docs/transport.md, "Acknowledgements").
//
// Acknowledgements are cumulative: the newest placed seq the requester asked about is the
// only one that matters, so at most one control frame is pending. It goes on the wire only
// between whole data frames (FrameSender gathers it), and at most one is queued per poll().
// An ack that only Sends asked for, on a connection whose side posts Sends too, is lazy: it
// waits for the next outgoing frame or call, and a newer one replaces it while none of its
// bytes are on the wire.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frame.h"

namespace rdmarepl::transport::tcp {

class OutgoingAcks {
 public:
  // The peer asked for an acknowledgement of `seq` (just placed): at once when a write
  // asked, deferrable when only Sends did.
  void requested(uint64_t seq, bool by_write) noexcept {
    wanted_ = seq;
    if (by_write) urgent_ = true;
  }
  // This side posted a Send: acks of the peer's Sends may wait for our next frame.
  void posts_sends() noexcept { posts_sends_ = true; }

  // Queues the acknowledgement the peer asked for (at most one per poll()): at once when a
  // write asked, deferred to the next outgoing frame or call when only Sends did.
  void queue() noexcept {
    if (wanted_ <= sent_) return;
    // A deferred ack not yet on the wire is brought up to date (acks are cumulative); any
    // other control frame in flight goes first.
    if (pending_ && !(lazy_ && offset_ == 0)) return;
    queue_control(FrameType::ack, wanted_, 0);
    sent_ = wanted_;
    // Only Sends asked, and this side sends too (request/response): the ack waits for our
    // next frame or call.
    lazy_ = !urgent_ && posts_sends_;
    urgent_ = false;
  }

  // A control frame waits to be sent (or is partly on the wire).
  [[nodiscard]] bool pending() const noexcept { return pending_; }
  // The pending control frame is a deferred ack.
  [[nodiscard]] bool lazy() const noexcept { return lazy_; }
  // Bytes of the pending frame already on the wire (0 < offset(): it was cut).
  [[nodiscard]] size_t offset() const noexcept { return offset_; }
  // The pending frame's bytes not yet on the wire, from rest() for rest_length() bytes.
  [[nodiscard]] const uint8_t* rest() const noexcept { return frame_ + offset_; }
  [[nodiscard]] size_t rest_length() const noexcept { return kFrameHeaderBytes - offset_; }

  // `bytes` more of the pending frame went on the wire.
  void advance(size_t bytes) noexcept {
    offset_ += bytes;
    if (offset_ == kFrameHeaderBytes) drop();
  }
  // Nothing is pending any more (sent whole, or the connection failed).
  void drop() noexcept {
    pending_ = false;
    lazy_ = false;
    offset_ = 0;
  }

 private:
  void queue_control(FrameType type, uint64_t seq, uint32_t syndrome) noexcept {
    FrameHeader h;
    h.type = type;
    h.rkey = syndrome;
    h.seq = seq;
    h.encode(frame_);
    offset_ = 0;
    pending_ = true;
  }

  // One pending control frame (an ack) sent between data frames.
  uint8_t frame_[kFrameHeaderBytes] = {};
  size_t offset_ = 0;
  bool pending_ = false;
  uint64_t wanted_ = 0;  // highest placed seq the requester asked us to acknowledge
  uint64_t sent_ = 0;
  bool urgent_ = false;       // a write asked for wanted_: no deferral
  bool lazy_ = false;         // the pending control frame is a deferred ack
  bool posts_sends_ = false;  // this side posted a Send: acks of the peer's Sends may wait
};

}  // namespace rdmarepl::transport::tcp
