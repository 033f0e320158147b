// The narrow transport interface. It is used at batch granularity (one virtual call per
// batch of work requests or completions), so its cost is amortised on the data path.
// Semantics copy RC verbs: see docs/ARCHITECTURE.md ("Transport semantics").
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport {

// Owner of one registration; deregisters on destruction. Move-only through unique_ptr.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  [[nodiscard]] virtual const RegisteredRegion& region() const noexcept = 0;
  [[nodiscard]] RemoteRegion remote() const noexcept {
    const auto& r = region();
    return RemoteRegion{reinterpret_cast<uint64_t>(r.addr), static_cast<uint32_t>(r.length),
                        r.keys.rkey};
  }
};

// Where a listener counts what its admission of handshakes decided (docs/transport.md,
// "Handshake admission"); either may be null.
struct HandshakeCounters {
  std::atomic<uint64_t>* timeouts = nullptr;  // handshakes not finished within connect_timeout
  std::atomic<uint64_t>* refused = nullptr;   // closed at once, or whose handshake failed
};

// Listener side: whether to accept a peer whose Hello arrived (authenticated when keyed):
// its node id, its address ("host:port") and its app_data. An error refuses the peer before
// the handshake completes; the peer is told its message (a Reject, docs/wire_format.md,
// "Bootstrap handshake") and accept() fails with it. Called on a handshake thread.
using PeerCheck = std::function<Status(std::string_view node_id, std::string_view address,
                                       std::string_view app_data)>;

// Parameters of a connection, given by both sides before the handshake.
struct ConnectionOptions {
  std::string node_id;                // our identity, sent to the peer
  std::string pre_shared_key;         // empty: no authentication
  std::vector<RemoteRegion> regions;  // regions we let the peer write into
  std::string app_data;               // opaque bytes for the layer above (<= 64 KiB)
  uint32_t send_queue_depth = 1024;   // max outstanding write requests
  uint32_t recv_queue_depth = 1024;   // max posted receives
  // Receives (wr_ids 0..initial_recvs-1) posted before the peer learns that the connection
  // is up, so that it may write at once. A receiver that posts them itself after accept()
  // returns races the peer's first write (on verbs that write fails as an RNR error once
  // the peer's rnr_retry runs out). At most recv_queue_depth.
  uint32_t initial_recvs = 0;
  std::chrono::milliseconds connect_timeout{5000};
  // Listener side (accept()): accepted connections that may be in their handshake at once.
  // When full, the oldest silent one is closed to make room; once half of it is in use,
  // more than a quarter of it from one address, or any from an address backing off
  // after failed handshakes, are closed at once. Each has connect_timeout from its accept.
  uint32_t max_handshakes = 64;
  HandshakeCounters counters;  // listener side
  PeerCheck check_peer;        // listener side; empty: every authenticated peer is accepted
};

// What we learnt about the peer in the handshake.
struct PeerInfo {
  std::string node_id;
  std::string address;                // "host:port" for messages
  std::vector<RemoteRegion> regions;  // regions the peer lets us write into
  std::string app_data;
  // Keys for authenticating data after the handshake (set only with a pre-shared key).
  SessionKeys session_keys;
};

// One reliable connection (a QP). post_* and poll are the data path: they never throw or
// allocate, and one thread at a time may call them. A connection that hits an error moves
// to the error state; pending requests then complete with WcStatus::flushed and `error()`
// says what happened.
class Connection {
 public:
  virtual ~Connection() = default;

  // Posts a chain of writes-with-immediate, in order. All or nothing.
  virtual PostStatus post_writes(std::span<const WriteRequest> requests) noexcept = 0;
  // Posts `count` zero-length receives; each write-with-imm from the peer consumes one.
  virtual PostStatus post_recvs(uint32_t count, uint64_t first_wr_id = 0) noexcept = 0;
  // Posts a chain of two-sided sends, in order after the writes posted before them. All or
  // nothing. Each consumes one receive at the peer (see SendRequest).
  virtual PostStatus post_sends(std::span<const SendRequest> requests) noexcept = 0;
  // Posts receives with buffers for two-sided sends, in order behind the receives posted
  // before (post_recvs() and this share one receive queue; an incoming write-with-imm or
  // send consumes the oldest). All or nothing.
  virtual PostStatus post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept = 0;
  // Posts a chain of RDMA Reads, in order after the requests posted before them. All or
  // nothing. A read completes only after every request posted before it (RC ordering).
  virtual PostStatus post_reads(std::span<const ReadRequest> requests) noexcept = 0;
  // Reaps up to out.size() completions (send and receive side). Returns how many. Also
  // makes progress for transports that need the CPU to move bytes (TCP).
  virtual size_t poll(std::span<Completion> out) noexcept = 0;
  // Blocks until poll() may return something, the timeout passes, or the connection fails.
  // Control plane: used by blocking polling modes.
  virtual Status wait(std::chrono::milliseconds timeout) = 0;
  // For waiting on many connections at once (wait_any()): fills `out` with the descriptors
  // that become ready when poll() may return something. Returns how many it filled (at most
  // out.size()); 0 when the transport has no descriptor to offer (wait_any() then only
  // naps); -1 when poll() may return something now. TCP first sends an acknowledgement it
  // deferred (the caller may be about to block). Not on the data path of a single
  // connection: for threads that serve many.
  virtual int readiness(std::span<pollfd> out) noexcept {
    (void)out;
    return 0;
  }
  // After wait_any() polled what readiness() filled (also when the poll timed out, with no
  // events): consumes their events (verbs: the completion channel's event; TCP: whether the
  // socket was readable, so that the next poll() does not read a socket poll(2) found
  // empty).
  virtual void consume_readiness(std::span<const pollfd> fds) noexcept { (void)fds; }

  [[nodiscard]] virtual bool healthy() const noexcept = 0;
  // Why the connection left the healthy state (empty message while healthy).
  [[nodiscard]] virtual Error error() const = 0;
  [[nodiscard]] virtual const PeerInfo& peer() const noexcept = 0;
  // Closes the connection; pending requests complete as flushed.
  virtual void close() noexcept = 0;

  // Control plane (may allocate; not concurrently with the data path calls above): resizes
  // the connection's completion queue(s) to hold `entries` completions each, never fewer
  // than the connection's floor (what its send and receive queues can have outstanding,
  // so that a queue can never overflow). Verbs: ibv_resize_cq on both CQs; TCP: its
  // completion ring. Returns whether a size changed (false: already that size, or the
  // transport has no completion queue to size). Used by the QP manager (qp_manager.h).
  virtual Result<bool> resize_completions(uint32_t entries) {
    (void)entries;
    return false;
  }
  // The completion entries in force (0: the transport has no completion queue to size).
  [[nodiscard]] virtual uint32_t completion_entries() const noexcept { return 0; }
};

// Blocks until one of `conns` may have something to poll(), `timeout` passes, or one fails:
// one poll(2) over every connection's readiness() descriptors. Returns true when something
// may be ready (or a connection offers no descriptor, after a nap of at most 50 us), false
// when the timeout passed. Control plane: a thread serving many connections waits here
// instead of spinning on each one's poll().
bool wait_any(std::span<Connection* const> conns, std::chrono::milliseconds timeout);

// Why a completion with `status` failed on `conn`, in the words of the connection's own
// transport: its error() when it has one (TCP names EOF, ECONNRESET, a bad frame ...; verbs
// the ibv_wc_status and vendor error), else the verbs status name and what to do. Control
// plane (allocates): for the log line of a dropped connection.
std::string failure_reason(const Connection& conn, WcStatus status);

class Listener {
 public:
  virtual ~Listener() = default;
  // Waits for one peer and runs the handshake. A peer that fails the handshake (bad key,
  // garbage) is refused, logged by the listener (at most one line per kind and address per
  // second, with a count of those held back) and reported in the returned error; the
  // listener stays usable. Options it cannot accept with fail before any peer
  // (options_refused()).
  // Thread-safe on the TCP and verbs listeners (RDMA CM included): several threads may
  // accept at once, each running its own handshake; a peer that has sent nothing never
  // reaches one of them, and connections closed before a handshake (silent, over the
  // limits, an RDMA CM request that is not ours) are logged and counted, not returned
  // (docs/transport.md, "Handshake admission").
  virtual Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                                     std::chrono::milliseconds timeout) = 0;
  [[nodiscard]] virtual Endpoint local_endpoint() const = 0;
  // Whether several threads may call accept() at once (the TCP and verbs listeners).
  [[nodiscard]] virtual bool accepts_concurrently() const noexcept { return false; }
};

// Whether accept() or connect() refused its ConnectionOptions (before any peer was involved)
// rather than a peer: a caller's mistake that repeats on every call.
inline bool options_refused(const Error& e) noexcept {
  return e.is(Errc::invalid_argument) || e.is(Errc::too_large);
}

// A transport instance: a protection domain plus a way to make connections.
class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  // "tcp", "verbs"

  // Registers [addr, addr+length) with `access`. Control plane; expensive on verbs.
  virtual Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, size_t length,
                                                                Access access) = 0;
  // Registration as a pair of plain calls, for the memory layer's injected registrar.
  virtual Result<RegisteredRegion> register_raw(void* addr, size_t length, Access access) = 0;
  virtual void deregister_raw(const RegisteredRegion& region) noexcept = 0;

  virtual Result<std::unique_ptr<Listener>> listen(const Endpoint& where) = 0;
  virtual Result<std::unique_ptr<Connection>> connect(const Endpoint& where,
                                                      const ConnectionOptions& options) = 0;
};

}  // namespace rdmarepl::transport
