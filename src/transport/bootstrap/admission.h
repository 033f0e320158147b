// Admission of arriving connections to the bootstrap handshake (docs/transport.md,
// "Handshake admission"), for every listener that runs it: TCP, verbs with the TCP bootstrap
// (socket_arrivals.h) and verbs over RDMA CM (transport/verbs/cm_listener.cc). Connections
// are taken as soon as they arrive and held, each with its own deadline (connect_timeout
// from its arrival), until the peer sends its first bytes; only then does a thread run the
// handshake on it. So a peer that connects and stays silent never occupies a handshake
// thread, and never delays another peer. Limits:
//   - at most max_handshakes connections held or in their handshake at once: when full, a
//     new connection takes the place of the oldest held one (silent the longest), which is
//     closed; once half of max_handshakes is in use, at most a quarter of it (at least 1)
//     from one address: a new connection from an address at that limit takes the place of
//     that address's oldest held one; one handshake running per address, the others held;
//   - an address whose last kFailuresBeforePacing handshakes failed (refused by the
//     handshake, timed out after the peer spoke, or not readied to be held) is paced: its
//     next handshake starts no sooner than kFailedPace after its last failure; its
//     connections wait, held, meanwhile. Nothing is closed for its address's past: a peer
//     that fails cannot shut out the other peers at that address (a real leader behind
//     the same NAT, proxy or host); it can only slow its own attempts down to one per
//     kFailedPace. A peer that completed the handshake up to its Hello and was then
//     declined by the layer above (ConnectionOptions::check_peer) did not fail: that is a
//     decision about that peer. Connections closed while silent (at their deadline, to
//     make room) cost nothing but a descriptor and are not failures either.
// Every connection closed here, and every handshake that failed, is logged with the peer's
// address (at most one line per kind and address per second, with a count of those held
// back: core/repeat_limiter.h) and counted.
//
// What a connection is depends on the listener: Admission sees it through Pending (one
// arrived connection) and Arrivals (where they arrive), both pollable.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/repeat_limiter.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::bootstrap {

inline constexpr uint32_t kFailuresBeforePacing = 3;
inline constexpr std::chrono::milliseconds kFailedPace{50};
inline constexpr size_t kMaxTrackedAddresses = 4096;

// One arrived connection, from its arrival until it is handed to a handshake thread.
// Destroying it closes the connection (a TCP socket is closed; an RDMA CM request is
// rejected, an accepted one disconnected), unless its owner took it over.
class Pending {
 public:
  virtual ~Pending() = default;
  // Admitted: readies the connection to be held (TCP: socket options; RDMA CM: the queue
  // pair, its buffers and receives, rdma_accept). Called without Admission's lock. An
  // error closes the connection; it counts as a failed handshake of its address.
  virtual Status hold(const ConnectionOptions& o) = 0;
  // Appends the descriptors that turn readable when the peer may have spoken or left.
  virtual void watch(std::vector<pollfd>& out) const = 0;
  // Some of those descriptors (`polled`, with their revents, in watch()'s order) turned
  // readable: consumes what woke them and says whether the peer spoke or left, so that its
  // handshake can run (or report that it left).
  virtual bool spoke(std::span<const pollfd> polled) = 0;
};

// Where connections arrive: a listening socket, an RDMA CM listener's event channel.
class Arrivals {
 public:
  struct Arrival {
    std::unique_ptr<Pending> conn;  // null: none is waiting
    std::string address;            // the peer's host:port
  };
  virtual ~Arrivals() = default;
  // Readable when next() may return a connection.
  [[nodiscard]] virtual int fd() const noexcept = 0;
  // The next connection that arrived; never blocks. Called under Admission's lock.
  virtual Arrival next() = 0;
};

// A connection whose peer has spoken, ready for its handshake.
struct Admitted {
  std::unique_ptr<Pending> conn;
  std::string host;  // the peer's address without the port: the key of the limits
  Deadline deadline = Deadline::never();
};

class Admission {
 public:
  enum class Outcome : uint8_t { ok, timeout, failed, declined };

  // `local` names the listener in log lines.
  Admission(std::unique_ptr<Arrivals> arrivals, std::string local)
      : arrivals_(std::move(arrivals)), local_(std::move(local)) {}
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Waits until `wait` for a connection whose peer has sent something. Thread-safe: the
  // lock is not held while polling.
  // Errc::timeout when none came.
  Result<Admitted> next(const ConnectionOptions& o, Deadline wait);
  // The handshake of a connection from `host` that next() returned has ended; `why`: the
  // handshake's error (logged, rate-limited), unless it succeeded.
  void finished(const std::string& host, Outcome outcome, const ConnectionOptions& o,
                std::string_view why = {});
  // A listener's accept(): waits up to `timeout` for a peer that spoke (next()), runs
  // `handshake(admitted, options)` on it with options whose check_peer notes a refusal
  // (declining()), and reports how it ended (finished()). Returns what the handshake did.
  template <typename Handshake>
  auto accept_one(const ConnectionOptions& o, std::chrono::milliseconds timeout,
                  Handshake&& handshake);

 private:
  struct Held {
    std::unique_ptr<Pending> conn;
    std::string host;
    std::string address;  // host:port, for log lines
    Clock::time_point arrived;
    uint64_t id = 0;  // tells a held connection from a later one in the same place
  };
  struct Record {
    uint32_t in_flight = 0;          // held, being readied to be held, or in their handshake
    uint32_t running = 0;            // in their handshake
    uint32_t failures = 0;           // consecutive
    Clock::time_point not_before{};  // paced: no handshake starts before

    Clock::time_point last_seen{};
  };
  // Which pollfds of one next() round belong to which held connection.
  struct Watched {
    uint64_t id = 0;
    size_t first = 0;
    size_t count = 0;
  };

  // Takes everything that arrived; closes what the limits refuse. Unlocks `lock` while a
  // connection is readied to be held.
  void accept_all(std::unique_lock<std::mutex>& lock, const ConnectionOptions& o);
  // Why a new connection from `host` is closed at once (empty: admitted). Caller holds mu_.
  std::string refusal(const std::string& host, const ConnectionOptions& o);
  // Whether a held connection from `r`'s address may start its handshake now.
  static bool may_start(const Record& r, Clock::time_point now) noexcept {
    return r.running == 0 && r.not_before <= now;
  }
  // Closes held connections past their deadline. Caller holds mu_.
  void expire(const ConnectionOptions& o);
  // Closes the held connection at `i` to make room for a new one. Caller holds mu_.
  void evict(size_t i, const ConnectionOptions& o);
  // Releases the place of `h` (taken out of held_) and queues it for closing. Caller holds
  // mu_.
  void drop(Held& h);
  // One more failure of `r` (paces it from the third in a row). Caller holds mu_.
  void fail(Record& r);
  void forget_idle();  // bounds peers_; caller holds mu_
  // A log line of `kind` about `host`, rate-limited per kind and host.
  void warn(std::string_view kind, const std::string& host, const std::string& line);
  // Reports the lines that warn() held back in intervals that ended.
  void flush_log();

  std::mutex mu_;
  std::unique_ptr<Arrivals> arrivals_;
  std::string local_;
  std::vector<Held> held_;
  // Dropped connections, destroyed by next() after it released the lock (closing an RDMA
  // CM connection destroys a queue pair and its queues).
  std::vector<std::unique_ptr<Pending>> closing_;
  std::unordered_map<std::string, Record> peers_;
  RepeatLimiter log_limiter_;
  uint32_t in_flight_ = 0;
  uint64_t next_id_ = 0;
};

// How a handshake that returned `r` counts for Admission::finished(); `declined`: the
// check_peer of declining() refused the peer.
template <typename T>
Admission::Outcome outcome_of(const Result<T>& r, bool declined = false) noexcept {
  if (r.ok()) return Admission::Outcome::ok;
  if (declined) return Admission::Outcome::declined;
  return r.error().is(Errc::timeout) ? Admission::Outcome::timeout : Admission::Outcome::failed;
}

// A copy of `o` for one handshake whose check_peer, if `o` has one, sets `declined` when it
// refuses the peer.
ConnectionOptions declining(const ConnectionOptions& o, bool& declined);

template <typename Handshake>
auto Admission::accept_one(const ConnectionOptions& o, std::chrono::milliseconds timeout,
                           Handshake&& handshake) {
  using R = decltype(handshake(std::declval<Admitted&>(), o));
  auto peer = next(o, Deadline::after(timeout));
  if (!peer) return R(std::move(peer).error());
  bool declined = false;
  R conn = handshake(*peer, declining(o, declined));
  finished(peer->host, outcome_of(conn, declined), o, conn.ok() ? "" : conn.error().message());
  return conn;
}

}  // namespace rdmarepl::transport::bootstrap
