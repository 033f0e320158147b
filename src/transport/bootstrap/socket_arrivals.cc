#include "transport/bootstrap/socket_arrivals.h"

#include <sys/socket.h>

#include <cerrno>

namespace rdmarepl::transport::bootstrap {

Status HeldSocket::hold(const ConnectionOptions&) {
  return tune_socket(fd_.get());
}

void HeldSocket::watch(std::vector<pollfd>& out) const {
  out.push_back(pollfd{fd_.get(), POLLIN, 0});
}

// Readable: the peer sent bytes, or hung up (its handshake then says so).
bool HeldSocket::spoke(std::span<const pollfd>) {
  return true;
}

Arrivals::Arrival SocketArrivals::next() {
  for (;;) {
    Fd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return {};  // EAGAIN: the backlog is empty (other errors: tried again on the next call)
    }
    std::string address = peer_address(fd.get());
    return Arrival{std::make_unique<HeldSocket>(std::move(fd)), std::move(address)};
  }
}

}  // namespace rdmarepl::transport::bootstrap
