// The responder's side of RDMA Read emulation on one TCP connection: the read responses
// this side owes the peer, in request order. Each is a read_response frame header followed
// by the requested bytes, sent straight from the registered region (no copy), by
// FrameSender between the other frames (docs/wire_format.md, "TCP transport frames").
//
// Invariant: at most kMaxReadsInFlight responses are owed (the requester keeps no more
// read requests on the wire; a peer that sends more is refused), so the ring allocated
// when the connection is built never fills. Responses [head(), tail()) are owed; offset()
// bytes of the head one are on the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "frame.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::tcp {

// A read response this side owes the peer (responder of its reads).
struct ReadResponse {
  const uint8_t* data = nullptr;
  uint32_t length = 0;
  uint8_t header[kFrameHeaderBytes] = {};
};

class ReadResponses {
 public:
  ReadResponses() : rsp_(kMaxReadsInFlight) {}

  [[nodiscard]] bool full() const noexcept { return tail_ - head_ >= rsp_.size(); }
  // Queues the response to read request `seq`: `length` bytes at `data` (not full()).
  void push(const uint8_t* data, uint32_t length, uint64_t seq) noexcept {
    ReadResponse& r = rsp_[tail_ % rsp_.size()];
    r.data = data;
    r.length = length;
    FrameHeader h;
    h.type = FrameType::read_response;
    h.length = length;
    h.seq = seq;
    h.encode(r.header);
    ++tail_;
  }

  [[nodiscard]] bool pending() const noexcept { return head_ < tail_; }
  [[nodiscard]] uint64_t head() const noexcept { return head_; }
  [[nodiscard]] uint64_t tail() const noexcept { return tail_; }
  [[nodiscard]] const ReadResponse& at(uint64_t index) const noexcept {
    return rsp_[index % rsp_.size()];
  }
  [[nodiscard]] size_t offset() const noexcept { return offset_; }
  // `bytes` more of the head response went on the wire.
  void advance(size_t bytes) noexcept {
    offset_ += bytes;
    if (offset_ == kFrameHeaderBytes + at(head_).length) {
      ++head_;
      offset_ = 0;
    }
  }
  // The error state: nothing more is owed.
  void clear() noexcept {
    head_ = tail_;
    offset_ = 0;
  }

 private:
  std::vector<ReadResponse> rsp_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  size_t offset_ = 0;  // bytes of the head response on the wire
};

}  // namespace rdmarepl::transport::tcp
