// Admission of accepted TCP connections to the bootstrap handshake, for the socket-based
// listeners (docs/transport.md, "Handshake admission"). Connections are accepted as soon as
// they arrive and held, each with its own deadline (connect_timeout from its accept), until
// the peer sends its first bytes; only then does a thread run the handshake on it. So a
// peer that connects and stays silent never occupies a handshake thread, and never delays
// another peer. Limits:
//   - at most max_handshakes connections held or in their handshake at once: when full, a
//     new connection takes the place of the oldest held one (silent the longest), which is
//     closed; once half of max_handshakes is in use, at most a quarter of it (at least 1)
//     from one address; one handshake running per address: excess connections are closed
//     at once;
//   - an address whose last kFailuresBeforeBackoff handshakes failed (timed out, or refused
//     by the handshake) is backing off: its connections are closed at once for 1 s, doubling
//     with every further failure up to 60 s; a successful handshake ends it. A peer that
//     completed the handshake up to its Hello and was then declined by the layer above
//     (ConnectionOptions::check_peer) did not fail: that is a decision about that peer, and
//     counting it would lock out other peers at the same address (a deposed leader retrying
//     beside the leader that replaced it on the same host).
// Every connection closed here is logged with the peer's address and counted.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::bootstrap {

inline constexpr uint32_t kFailuresBeforeBackoff = 3;
inline constexpr std::chrono::seconds kFirstBackoff{1};
inline constexpr std::chrono::seconds kMaxBackoff{60};
inline constexpr size_t kMaxTrackedAddresses = 4096;

// A connection whose peer has spoken, ready for its handshake.
struct Admitted {
  Fd fd;
  std::string host;  // the peer's address without the port: the key of the limits
  Deadline deadline = Deadline::never();
};

class Admission {
 public:
  enum class Outcome : uint8_t { ok, timeout, failed, declined };

  // `listen_fd` (non-blocking, owned by the caller) and `local` (for log lines).
  Admission(int listen_fd, std::string local) : listen_fd_(listen_fd), local_(std::move(local)) {}
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Waits until `wait` for a connection whose peer has sent something. Thread-safe: the
  // lock is not held while polling.
  // Errc::timeout when none came.
  Result<Admitted> next(const ConnectionOptions& o, Deadline wait);
  // The handshake of a connection from `host` that next() returned has ended.
  void finished(const std::string& host, Outcome outcome, const ConnectionOptions& o);

 private:
  struct Held {
    Fd fd;
    std::string host;
    std::string address;  // host:port, for log lines
    Clock::time_point accepted;
    uint64_t id = 0;  // tells a held connection from a later one with the same descriptor
  };
  struct Record {
    uint32_t in_flight = 0;  // held or in their handshake
    uint32_t running = 0;    // in their handshake
    uint32_t failures = 0;   // consecutive
    Clock::time_point backoff_until{};
    Clock::time_point last_seen{};
  };

  // Accepts everything the backlog holds; closes what the limits refuse. Caller holds mu_.
  void accept_all(const ConnectionOptions& o);
  // Why a new connection from `host` is closed at once (empty: admitted). Caller holds mu_.
  std::string refusal(const std::string& host, const ConnectionOptions& o);
  // Closes held connections past their deadline. Caller holds mu_.
  void expire(const ConnectionOptions& o);
  // Closes the oldest held connection to make room for a new one. Caller holds mu_.
  void evict_oldest(const ConnectionOptions& o);
  // One more failure of `r` (starts or extends its backoff). Caller holds mu_.
  void fail(Record& r);
  void forget_idle();  // bounds peers_; caller holds mu_

  std::mutex mu_;
  int listen_fd_;
  std::string local_;
  std::vector<Held> held_;
  std::unordered_map<std::string, Record> peers_;
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

}  // namespace rdmarepl::transport::bootstrap
