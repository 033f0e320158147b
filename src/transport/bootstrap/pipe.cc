#include "transport/bootstrap/pipe.h"

#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::bootstrap {

SocketPipe::SocketPipe(int fd) : fd_(fd), peer_(peer_address(fd)) {}

Status SocketPipe::send(std::span<const uint8_t> bytes, Deadline deadline) {
  return send_all(fd_, bytes, deadline, peer_);
}

Status SocketPipe::recv_exact(std::span<uint8_t> out, Deadline deadline) {
  return bootstrap::recv_exact(fd_, out, deadline, peer_);
}

}  // namespace rdmarepl::transport::bootstrap
