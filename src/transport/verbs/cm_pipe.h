// The bootstrap handshake's byte pipe in RDMA CM mode: the connected QP itself. Each side
// registers a landing buffer (remote write) and announces it in the CM private data; a
// pipe send() is one write-with-immediate of the whole message into the peer's landing
// buffer at the next offset (imm = the bytes written), so the buffer fills from the start
// and never wraps. The receiver learns of each write from a receive completion on the
// connection's own receive CQ. Every side sends exactly kCmHandshakeWrites writes (its
// messages, then zero-length writes with imm 0), so exactly the kCmHandshakeWrites receives
// the pipe posted before any of the data path's are consumed. Layout and framing:
// docs/wire_format.md ("RDMA CM set-up").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/transport/types.h"
#include "transport/bootstrap/handshake.h"
#include "transport/verbs/handles.h"

namespace rdmarepl::transport::verbs {

// Writes each side sends during set-up (handshake messages + at least one padding write).
inline constexpr uint32_t kCmHandshakeWrites = bootstrap::kMaxMessagesSent + 1;
// Bytes of each landing buffer: the most one side's handshake sends.
inline constexpr size_t kCmLandingBytes = bootstrap::kMaxBytesSent;

class CmPipe final : public bootstrap::BytePipe {
 public:
  struct Queues {
    ibv_pd* pd = nullptr;
    ibv_qp* qp = nullptr;  // in INIT (or later); no receive of the data path posted yet
    ibv_srq* srq = nullptr;
    ibv_cq* send_cq = nullptr;
    ibv_cq* recv_cq = nullptr;
    ibv_comp_channel* channel = nullptr;  // both CQs' completion channel
    rdma_event_channel* cm = nullptr;     // the connection's CM events (non-blocking)
  };

  // Registers the landing and staging buffers and posts kCmHandshakeWrites receives.
  static Result<std::unique_ptr<CmPipe>> create(const Queues& q, std::string name);

  [[nodiscard]] RemoteRegion landing() const noexcept;
  void set_peer_landing(const RemoteRegion& r) noexcept { peer_landing_ = r; }
  void set_name(std::string name) { name_ = std::move(name); }

  Status send(std::span<const uint8_t> bytes, Deadline deadline) override;
  Status recv_exact(std::span<uint8_t> out, Deadline deadline) override;
  [[nodiscard]] std::string peer() const override { return name_; }

  // After a successful handshake: sends the zero-length writes that bring ours to
  // kCmHandshakeWrites and waits until all of the peer's have arrived (so every receive the
  // pipe posted is consumed) and none of its bytes is left unread.
  Status finish(Deadline deadline);

 private:
  CmPipe(const Queues& q, std::string name) : q_(q), name_(std::move(name)) {}
  Status write(size_t offset, uint32_t length, Deadline deadline);
  Status receive_one(Deadline deadline);
  // Polls `cq` for one completion, sleeping on the completion channel until `deadline`.
  Status next_completion(ibv_cq* cq, ibv_wc& wc, Deadline deadline, const char* what);
  // Errc::connection_closed once the peer disconnected (remembered: the event is read once).
  Status check_cm_events();

  Queues q_;
  std::string name_;
  std::vector<uint8_t> rx_;  // the landing buffer: the peer writes here
  std::vector<uint8_t> tx_;  // staging: what we write into the peer's landing buffer
  MrHandle rx_mr_;
  MrHandle tx_mr_;
  RemoteRegion peer_landing_;
  size_t tx_offset_ = 0;
  size_t rx_available_ = 0;
  size_t rx_read_ = 0;
  uint32_t writes_sent_ = 0;
  uint32_t writes_received_ = 0;
  bool peer_gone_ = false;  // a disconnect event was read
  std::string gone_event_;
};

}  // namespace rdmarepl::transport::verbs
