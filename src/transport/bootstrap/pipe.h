// The byte stream the bootstrap handshake runs over. The handshake (handshake.h) only sends
// whole messages and receives exact byte counts before a deadline, so anything that moves
// bytes reliably and in order can carry it: a TCP socket (SocketPipe, below), or, in RDMA CM
// mode, write-with-immediate requests on the freshly connected QP (verbs/cm_pipe.h).
#pragma once

#include <span>
#include <string>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"

namespace rdmarepl::transport::bootstrap {

class BytePipe {
 public:
  virtual ~BytePipe() = default;
  // Sends all of `bytes` (one handshake message per call) or fails by `deadline`.
  virtual Status send(std::span<const uint8_t> bytes, Deadline deadline) = 0;
  // Receives exactly out.size() bytes. A peer that goes away first yields
  // Errc::connection_closed; nothing by `deadline`, Errc::timeout.
  virtual Status recv_exact(std::span<uint8_t> out, Deadline deadline) = 0;
  // The other end, for messages ("host:port").
  [[nodiscard]] virtual std::string peer() const = 0;
};

// A connected, non-blocking TCP (or Unix) socket; the caller keeps owning the descriptor.
class SocketPipe final : public BytePipe {
 public:
  explicit SocketPipe(int fd);
  Status send(std::span<const uint8_t> bytes, Deadline deadline) override;
  Status recv_exact(std::span<uint8_t> out, Deadline deadline) override;
  [[nodiscard]] std::string peer() const override { return peer_; }

 private:
  int fd_;
  std::string peer_;
};

}  // namespace rdmarepl::transport::bootstrap
