// The read client's connection to one replica: the handshake (hello, "ready"), its
// registered request and response buffers, and how many requests are in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/reads/options.h"
#include "rdmarepl/transport/transport.h"
#include "read_format.h"

namespace rdmarepl::reads {

class ReplicaLink {
 public:
  // A response received into slot `slot`; valid until release(slot).
  struct Response {
    uint32_t slot = 0;
    std::span<const uint8_t> message;
  };

  static Result<std::unique_ptr<ReplicaLink>> open(transport::Transport& transport,
                                                   const transport::Endpoint& where,
                                                   const ReadClientOptions& options);

  [[nodiscard]] bool can_send() const noexcept;
  [[nodiscard]] uint32_t max_request_bytes() const noexcept { return hello_.max_request_bytes; }
  [[nodiscard]] bool leader() const noexcept { return hello_.leader; }
  // False when the link failed (see error()).
  bool send(const RequestHeader& h, std::span<const std::string_view> keys) noexcept;
  // Reaps completions; appends responses to `out`. False once the link failed.
  bool poll(std::vector<Response>& out);
  void release(uint32_t slot) noexcept;
  // The connection, for waiting on several links at once (transport::wait_any).
  [[nodiscard]] transport::Connection& connection() noexcept { return *conn_; }
  [[nodiscard]] std::string error() const;
  [[nodiscard]] const transport::Endpoint& endpoint() const noexcept { return where_; }
  [[nodiscard]] uint32_t in_flight() const noexcept { return in_flight_; }

 private:
  explicit ReplicaLink(transport::Endpoint where) : where_(std::move(where)) {}
  Status setup(transport::Transport& transport, const ReadClientOptions& options);

  transport::Endpoint where_;
  std::unique_ptr<transport::Connection> conn_;
  Hello hello_;
  uint32_t depth_ = 0;
  std::vector<uint8_t> rx_;
  std::vector<uint8_t> tx_;
  std::unique_ptr<transport::MemoryRegion> rx_mr_;
  std::unique_ptr<transport::MemoryRegion> tx_mr_;
  std::vector<uint32_t> free_tx_;
  uint32_t in_flight_ = 0;
  std::string failure_;
};

}  // namespace rdmarepl::reads
