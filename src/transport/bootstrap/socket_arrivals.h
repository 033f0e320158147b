// What bootstrap::Admission holds for the socket-based listeners (TCP, verbs with the TCP
// bootstrap): accepted TCP connections, held until the peer's first bytes make the socket
// readable (or its hang-up does: the handshake then reports it).
#pragma once

#include "transport/bootstrap/admission.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::bootstrap {

class HeldSocket final : public Pending {
 public:
  explicit HeldSocket(Fd fd) noexcept : fd_(std::move(fd)) {}
  Status hold(const ConnectionOptions& o) override;
  void watch(std::vector<pollfd>& out) const override;
  bool spoke(std::span<const pollfd> polled) override;
  Fd take() noexcept { return std::move(fd_); }

 private:
  Fd fd_;
};

// Connections accepted from a non-blocking listening socket the caller owns.
class SocketArrivals final : public Arrivals {
 public:
  explicit SocketArrivals(int listen_fd) noexcept : listen_fd_(listen_fd) {}
  [[nodiscard]] int fd() const noexcept override { return listen_fd_; }
  Arrival next() override;

 private:
  int listen_fd_;
};

// The socket of a connection that an Admission over SocketArrivals handed over.
inline Fd take_socket(Admitted& a) noexcept {
  return static_cast<HeldSocket&>(*a.conn).take();
}

}  // namespace rdmarepl::transport::bootstrap
