// Plain value types shared by every transport and by the memory layer. They copy the
// vocabulary of RC verbs: keys, remote descriptors, work requests and completions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::transport {

// Access rights of a registered region (a subset of ibv_access_flags).
enum class Access : uint32_t {
  local_write = 1u << 0,
  remote_write = 1u << 1,
  remote_read = 1u << 2,
};
constexpr Access operator|(Access a, Access b) noexcept {
  return static_cast<Access>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr bool has(Access set, Access bit) noexcept {
  return (static_cast<uint32_t>(set) & static_cast<uint32_t>(bit)) != 0;
}

// The keys of one registration: lkey names it in local work requests, rkey lets a peer
// write (or read) into it.
struct MemoryKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  friend bool operator==(const MemoryKeys&, const MemoryKeys&) = default;
};

// A registration as the registering process sees it.
struct RegisteredRegion {
  void* addr = nullptr;
  size_t length = 0;
  MemoryKeys keys;
  Access access = Access::local_write;
  // Transport-private handle (e.g. the ibv_mr*), passed back on deregistration.
  void* handle = nullptr;

  // The first address as an integer, for ordering and range arithmetic.
  [[nodiscard]] uintptr_t start() const noexcept { return reinterpret_cast<uintptr_t>(addr); }
};

// What a peer needs to write into a registered region: plain value, serialisable
// (16 bytes on the wire, network byte order: addr u64 | length u32 | rkey u32).
struct RemoteRegion {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t rkey = 0;

  static constexpr size_t kWireSize = 16;
  void serialize(void* out) const noexcept {
    auto* p = static_cast<uint8_t*>(out);
    store_be64(p, addr);
    store_be32(p + 8, length);
    store_be32(p + 12, rkey);
  }
  static RemoteRegion deserialize(const void* in) noexcept {
    const auto* p = static_cast<const uint8_t*>(in);
    return RemoteRegion{load_be64(p), load_be32(p + 8), load_be32(p + 12)};
  }
  friend bool operator==(const RemoteRegion&, const RemoteRegion&) = default;
};

// A symmetric key of one direction of one connection, derived in the handshake from the
// pre-shared key and both sides' nonces (docs/wire_format.md, "Session keys").
inline constexpr size_t kSessionKeyBytes = 32;
using SessionKey = std::array<uint8_t, kSessionKeyBytes>;

// The session keys of an authenticated connection: `send` authenticates what this side
// sends, `recv` what the peer sends (the peer's `send`). `digest` keys the hash of a
// message's bytes under the tags of both directions; it depends on the pre-shared key
// only, so a leader hashes a batch once for all its followers (docs/wire_format.md,
// "Write authentication"). `set` is false without a pre-shared key.
struct SessionKeys {
  SessionKey send{};
  SessionKey recv{};
  SessionKey digest{};
  bool set = false;
};

// One piece of local memory of a gathered write (an ibv_sge): `length` bytes at `addr`,
// covered by the registration named by `lkey`.
struct LocalSegment {
  const void* addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// Segments one write may gather from: the first (local_addr, length, lkey) plus up to
// kMaxWriteSegments - 1 in WriteRequest::extra. Verbs QPs are created with this many SGEs.
inline constexpr size_t kMaxWriteSegments = 4;

// One RDMA Write-with-Immediate: `length` bytes from local memory (covered by `lkey`) are
// placed at `remote_addr` in the peer's region named by `rkey`; then the peer consumes one
// posted receive whose completion carries `imm`. Zero-length writes are allowed (the
// immediate alone is delivered).
//
// Gather: when extra_count > 0 the bytes placed are the first segment followed by
// extra[0 .. extra_count), contiguous at `remote_addr` (total_length() bytes). Each segment
// must be covered by its own lkey. Requests with extra_count 0 are plain single-buffer
// writes, so callers that never set the extra fields are unaffected.
struct WriteRequest {
  uint64_t wr_id = 0;
  const void* local_addr = nullptr;
  uint32_t length = 0;  // bytes of the first segment
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;         // host order here; transports carry it in network byte order
  bool signaled = true;     // unsignaled writes produce no send completion on success
  uint8_t extra_count = 0;  // <= kMaxWriteSegments - 1; more is PostStatus::invalid
  LocalSegment extra[kMaxWriteSegments - 1] = {};

  // Bytes placed at the peer: the first segment plus every extra one.
  [[nodiscard]] uint64_t total_length() const noexcept {
    uint64_t n = length;
    for (uint8_t i = 0; i < extra_count && i < kMaxWriteSegments - 1; ++i) n += extra[i].length;
    return n;
  }
  // The i-th segment, 0 being (local_addr, length, lkey); i < segment_count().
  [[nodiscard]] LocalSegment segment(size_t i) const noexcept {
    return i == 0 ? LocalSegment{local_addr, length, lkey} : extra[i - 1];
  }
  [[nodiscard]] size_t segment_count() const noexcept { return 1u + extra_count; }
  // Well formed: extra_count in range, no non-empty segment at a null address, and the
  // total fits the 32-bit length of a write.
  [[nodiscard]] bool well_formed() const noexcept {
    if (extra_count > kMaxWriteSegments - 1) return false;
    for (size_t i = 0; i < segment_count(); ++i) {
      LocalSegment s = segment(i);
      if (s.length > 0 && s.addr == nullptr) return false;
    }
    return total_length() <= UINT32_MAX;
  }
};

// One two-sided Send: `length` bytes from local memory (covered by `lkey`) go to the peer,
// which consumes its oldest posted receive: the bytes land in that receive's buffer and its
// completion (WcOpcode::recv) carries the byte count. A receive whose buffer is too small
// completes with local_length_error at the peer (Soft-RoCE reports local_qp_error) and
// fails the connection (the requester's send does not succeed). Zero-length sends are
// allowed.
struct SendRequest {
  uint64_t wr_id = 0;
  const void* local_addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
  bool signaled = true;  // unsignaled sends produce no completion on success
  // Well formed: a non-empty message names where its bytes are.
  [[nodiscard]] bool well_formed() const noexcept { return length == 0 || local_addr != nullptr; }
};

// One receive buffer for two-sided messages: `length` bytes at `addr`, covered by `lkey` of
// a region registered with local_write. Receives posted with Connection::post_recvs() are
// zero-length: a Send of one byte or more into one fails as a length error.
struct RecvBuffer {
  uint64_t wr_id = 0;
  void* addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// One RDMA Read: `length` bytes at `remote_addr` in the peer's region named by `rkey` are
// placed at `local_addr` (covered by `lkey`); the completion (WcOpcode::rdma_read, always
// signaled) says the bytes are there. The peer's CPU takes no part and consumes no receive.
// The region must be registered with Access::remote_read and wholly contain the range;
// otherwise the read fails with remote_access_error and the local buffer is unchanged.
struct ReadRequest {
  uint64_t wr_id = 0;
  void* local_addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Well formed: a non-empty read names where its bytes go.
  [[nodiscard]] bool well_formed() const noexcept { return length == 0 || local_addr != nullptr; }
};

// Reads a connection may have outstanding at the responder (the verbs max_rd_atomic the
// transports ask for); more posted reads wait in the send queue.
inline constexpr uint32_t kMaxReadsInFlight = 16;

// Completion status, named after ibv_wc_status. Anything but `success` moves the
// connection to the error state: later requests complete with `flushed`.
enum class WcStatus : uint8_t {
  success = 0,
  local_length_error,      // IBV_WC_LOC_LEN_ERR
  local_qp_error,          // IBV_WC_LOC_QP_OP_ERR
  local_protection_error,  // IBV_WC_LOC_PROT_ERR (bad lkey / range)
  flushed,                 // IBV_WC_WR_FLUSH_ERR
  remote_access_error,     // IBV_WC_REM_ACCESS_ERR (bad rkey / range at the responder)
  remote_invalid_request,  // IBV_WC_REM_INV_REQ_ERR
  remote_operation_error,  // IBV_WC_REM_OP_ERR
  retry_exceeded,          // IBV_WC_RETRY_EXC_ERR (peer unreachable / gone)
  rnr_retry_exceeded,      // IBV_WC_RNR_RETRY_EXC_ERR (no receive posted at the responder)
  fatal,                   // IBV_WC_FATAL_ERR and anything unmapped
};

// The ibv_wc_status-style name ("IBV_WC_REM_ACCESS_ERR") and what to do about it.
std::string_view to_string(WcStatus s) noexcept;
std::string_view wc_status_advice(WcStatus s) noexcept;

enum class WcOpcode : uint8_t {
  rdma_write = 0,          // requester side: a signaled WriteRequest finished
  recv_rdma_with_imm = 1,  // responder side: a write-with-imm landed, one receive consumed
  send = 2,                // requester side: a signaled SendRequest finished
  recv = 3,                // responder side: a Send landed in a posted receive buffer
  rdma_read = 4,           // requester side: a ReadRequest's bytes are placed locally
};
// Whether a completion belongs to the send queue (writes, sends, reads) or the receive queue.
constexpr bool is_send_side(WcOpcode op) noexcept {
  return op == WcOpcode::rdma_write || op == WcOpcode::send || op == WcOpcode::rdma_read;
}

struct Completion {
  uint64_t wr_id = 0;  // requester: the request's wr_id; responder: the receive's wr_id
  uint32_t imm = 0;    // responder only; host order
  uint32_t byte_len = 0;
  WcOpcode opcode = WcOpcode::rdma_write;
  WcStatus status = WcStatus::success;
};

// Data-path result of post calls: cheap, never throws or allocates.
enum class PostStatus : uint8_t {
  ok = 0,
  queue_full,    // the send queue has no room for the whole batch; nothing was posted
  invalid,       // a request is malformed (length 0 with a non-null address is fine)
  disconnected,  // the connection is in the error state
};

// host:port endpoint for listeners, bootstrap and TCP data connections.
struct Endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  [[nodiscard]] std::string to_string() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

}  // namespace rdmarepl::transport
