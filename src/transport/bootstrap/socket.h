// TCP socket helpers shared by the bootstrap handshake and the TCP transport. Every socket
// is created close-on-exec and non-blocking (timeouts are implemented with poll(2)), and
// connected sockets have TCP_NODELAY set: the handshake and the data frames are small
// request/response exchanges that Nagle's algorithm would delay.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::bootstrap {

// Owner of one file descriptor. Move-only; closes on destruction.
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the current descriptor (if any) and takes `fd`.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// A listening socket bound to `where` (port 0 picks a free port; see local_endpoint).
// SO_REUSEADDR is set so that a restarted process can rebind at once.
Result<Fd> listen_tcp(const Endpoint& where, int backlog = 128);

// Waits for one connection until `deadline`. The returned socket is non-blocking,
// close-on-exec and has TCP_NODELAY.
Result<Fd> accept_tcp(int listen_fd, Deadline deadline);

// Connects to `where` until `deadline` (tries every address the name resolves to).
Result<Fd> connect_tcp(const Endpoint& where, Deadline deadline);

// The address a socket is bound to / connected to.
Result<Endpoint> local_endpoint(int fd);
// "host:port" of the connected peer, or "<unknown peer>" when the socket has none.
std::string peer_address(int fd);

// Sends all of `bytes` on a non-blocking socket, waiting with poll(2) until `deadline`.
// `peer` names the other end in error messages.
Status send_all(int fd, std::span<const uint8_t> bytes, Deadline deadline, std::string_view peer);
// Receives exactly out.size() bytes. A peer that closes first yields Errc::connection_closed.
Status recv_exact(int fd, std::span<uint8_t> out, Deadline deadline, std::string_view peer);

// Sets TCP_NODELAY and, when `bytes` > 0, SO_SNDBUF / SO_RCVBUF.
Status tune_socket(int fd, int buffer_bytes = 0);

}  // namespace rdmarepl::transport::bootstrap
