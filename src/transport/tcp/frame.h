// Data frames of the TCP transport. docs/wire_format.md ("TCP transport frames") is the
// truth; this header mirrors it. Every field is big-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::transport::tcp {

inline constexpr size_t kFrameHeaderBytes = 32;
inline constexpr uint16_t kFrameMagic = 0x5446;  // "TF"

enum class FrameType : uint8_t {
  write = 1,
  ack = 2,
  nak = 3,
  send = 4,           // two-sided message: the payload lands in the oldest posted receive
  read_request = 5,   // RDMA Read: `length` bytes at remote_addr/rkey, no payload
  read_response = 6,  // the bytes of read request `seq`, as payload
};

// Write flags.
inline constexpr uint8_t kFlagAckRequested = 0x01;

// NAK syndromes: why the responder refused a write.
enum class NakSyndrome : uint32_t {
  remote_access = 1,    // rkey unknown / no remote-write access / range outside the region
  not_ready = 2,        // no receive posted (RNR)
  invalid_request = 3,  // malformed frame or sequence gap
};

struct FrameHeader {
  FrameType type = FrameType::write;
  uint8_t flags = 0;
  uint32_t length = 0;       // payload bytes (write, send, read response); read: bytes to read
  uint64_t remote_addr = 0;  // write: target; read request: source
  uint32_t rkey = 0;         // write, read request: key of that region; nak: syndrome
  uint32_t imm = 0;          // write only
  // write, send, read request: its number; ack: highest placed; nak: the refused request;
  // read response: the read request it answers
  uint64_t seq = 0;

  void encode(uint8_t* out) const noexcept {
    store_be16(out, kFrameMagic);
    out[2] = static_cast<uint8_t>(type);
    out[3] = flags;
    store_be32(out + 4, length);
    store_be64(out + 8, remote_addr);
    store_be32(out + 16, rkey);
    store_be32(out + 20, imm);
    store_be64(out + 24, seq);
  }

  // Decodes and checks the magic, the type and the flags of that type. Returns false for a
  // header that is not a valid frame (the caller refuses the peer).
  [[nodiscard]] bool decode(const uint8_t* in) noexcept {
    if (load_be16(in) != kFrameMagic) return false;
    uint8_t t = in[2];
    if (t < static_cast<uint8_t>(FrameType::write) ||
        t > static_cast<uint8_t>(FrameType::read_response))
      return false;
    type = static_cast<FrameType>(t);
    flags = in[3];
    length = load_be32(in + 4);
    remote_addr = load_be64(in + 8);
    rkey = load_be32(in + 16);
    imm = load_be32(in + 20);
    seq = load_be64(in + 24);
    if (type == FrameType::write || type == FrameType::send)
      return (flags & ~kFlagAckRequested) == 0;
    if (type == FrameType::read_request || type == FrameType::read_response) return flags == 0;
    return flags == 0 && length == 0;
  }
};

}  // namespace rdmarepl::transport::tcp
