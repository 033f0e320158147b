// One client connection of a read server: its registered request and response buffers,
// the requests parked until the replica catches up (at_least), and the answering of each
// request. Private to the read server; driven by its serving thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/reads/options.h"
#include "rdmarepl/reads/read_server.h"
#include "rdmarepl/transport/transport.h"
#include "read_format.h"

namespace rdmarepl::reads {

// Counters the serving thread adds to (plain: one writer; published by the core).
struct ServeCounters {
  uint64_t requests = 0;
  uint64_t keys = 0;
  uint64_t bad_requests = 0;
  uint64_t behind = 0;
};

// Buffer bytes left uninitialised, so that the pages are not resident until used: an idle
// connection costs a few pages, not queue_depth x (max_request_bytes + max_response_bytes)
// (on TCP; a verbs registration pins them all).
class UntouchedBytes {
 public:
  explicit UntouchedBytes(size_t n) : bytes_(new uint8_t[n]), size_(n) {}
  [[nodiscard]] uint8_t* data() noexcept { return bytes_.get(); }
  [[nodiscard]] size_t size() const noexcept { return size_; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  size_t size_;
};

class ServerConnection {
 public:
  // Registers the buffers, posts the receives and sends the "ready" message.
  static Result<std::unique_ptr<ServerConnection>> start(
      transport::Transport& transport, std::unique_ptr<transport::Connection> conn,
      const ReadServerOptions& options, const ReadHooks& hooks);

  // Reaps completions, answers requests and parked requests that became answerable.
  // Returns how much work it did (0: idle). False in `alive` once the connection failed.
  size_t serve(uint64_t now_ns, ServeCounters& counters, bool& alive) noexcept;
  [[nodiscard]] const std::string& peer_name() const noexcept { return peer_name_; }
  [[nodiscard]] transport::Connection& connection() noexcept { return *conn_; }
  // at_least requests waiting for the replica to apply their ticket.
  [[nodiscard]] bool has_parked() const noexcept { return !parked_.empty(); }
  // When the last request arrived (or the connection was set up, before any).
  [[nodiscard]] uint64_t last_request_ns() const noexcept { return last_request_ns_; }

 private:
  struct Parked {
    uint32_t slot = 0;
    RequestHeader header;
    uint64_t deadline_ns = 0;
  };
  ServerConnection(std::unique_ptr<transport::Connection> conn, const ReadServerOptions& options,
                   const ReadHooks& hooks);

  void on_request(uint32_t slot, uint32_t bytes, uint64_t now_ns, ServeCounters& c) noexcept;
  // Answers the request in receive slot `slot` (its keys parsed again) and reposts the slot.
  void answer(uint32_t slot, const RequestHeader& h, ResponseStatus status, uint64_t behind_by,
              ServeCounters& c) noexcept;
  void answer_bad(uint32_t slot, uint32_t request_id, std::string_view why,
                  ServeCounters& c) noexcept;
  // Queues a response; flush_sends() posts what serve() queued as one chain (one write to
  // the socket on TCP).
  void send(uint32_t tx, size_t bytes) noexcept;
  void flush_sends() noexcept;
  void repost(uint32_t slot) noexcept;
  bool take_tx(uint32_t& tx) noexcept;
  void fail(std::string why) noexcept;

  std::unique_ptr<transport::Connection> conn_;
  ReadServerOptions options_;
  ReadHooks hooks_;
  std::string peer_name_;
  UntouchedBytes rx_;  // queue_depth request slots
  UntouchedBytes tx_;  // queue_depth response slots
  std::unique_ptr<transport::MemoryRegion> rx_mr_;
  std::unique_ptr<transport::MemoryRegion> tx_mr_;
  std::vector<uint32_t> rx_bytes_;  // length of the request in each receive slot
  std::vector<uint32_t> free_tx_;
  std::vector<transport::SendRequest> outgoing_;  // responses queued by this serve()
  std::vector<Parked> parked_;
  std::vector<std::string_view> keys_;
  std::string value_;  // get()'s output, reused
  uint64_t last_request_ns_;
  bool failed_ = false;
};

}  // namespace rdmarepl::reads
