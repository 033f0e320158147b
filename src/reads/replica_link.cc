// The read client's connection to one replica (docs/reads.md, "Connection").
#include "replica_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::reads {
namespace {

constexpr uint32_t kMaxClientDepth = 16;
// Response buffers are posted with wr_id 1 + slot; wr_id 0 is the receive the "ready"
// message consumes (ConnectionOptions::initial_recvs).
constexpr uint64_t kFirstSlotWrId = 1;

}  // namespace

Result<std::unique_ptr<ReplicaLink>> ReplicaLink::open(transport::Transport& transport,
                                                       const transport::Endpoint& where,
                                                       const ReadClientOptions& options) {
  std::unique_ptr<ReplicaLink> link(new ReplicaLink(where));
  Status st = link->setup(transport, options);
  if (!st) {
    return Error(st.error().code(),
                 fmt::format("read replica {}: {}", where.to_string(), st.error().message()));
  }
  return link;
}

Status ReplicaLink::setup(transport::Transport& transport, const ReadClientOptions& options) {
  std::string hello(kHelloBytes, '\0');
  encode_hello(Hello{kClientHelloMagic, false, kMaxClientDepth, 0, 0},
               reinterpret_cast<uint8_t*>(hello.data()));
  transport::ConnectionOptions co;
  co.node_id = options.node_id;
  co.pre_shared_key = options.pre_shared_key;
  co.app_data = hello;
  co.initial_recvs = 1;
  co.send_queue_depth = kMaxClientDepth + 2;
  co.recv_queue_depth = kMaxClientDepth + 2;
  co.connect_timeout = options.connect_timeout;
  auto conn = transport.connect(where_, co);
  if (!conn.ok()) return std::move(conn).error();
  conn_ = std::move(*conn);
  std::string_view why;
  if (!parse_hello(conn_->peer().app_data, kServerHelloMagic, hello_, why))
    return Error(Errc::protocol_error, std::string(why));
  depth_ = std::min(kMaxClientDepth, hello_.queue_depth);
  if (depth_ == 0 || hello_.max_response_bytes < kResponseHeaderBytes)
    return Error(Errc::protocol_error, "the replica announced a queue depth or sizes of 0");
  rx_.resize(size_t{depth_} * hello_.max_response_bytes);
  tx_.resize(size_t{depth_} * hello_.max_request_bytes);
  auto rx = transport.register_memory(rx_.data(), rx_.size(), transport::Access::local_write);
  if (!rx.ok()) return std::move(rx).error();
  auto tx = transport.register_memory(tx_.data(), tx_.size(), transport::Access::local_write);
  if (!tx.ok()) return std::move(tx).error();
  rx_mr_ = std::move(*rx);
  tx_mr_ = std::move(*tx);
  for (uint32_t i = 0; i < depth_; ++i) {
    free_tx_.push_back(i);
    release(i);
  }
  // Wait for "ready": the replica has posted its request buffers.
  const Deadline deadline = Deadline::after(options.connect_timeout);
  transport::Completion c[4];
  for (;;) {
    const size_t n = conn_->poll(c);
    for (size_t i = 0; i < n; ++i) {
      if (c[i].status != transport::WcStatus::success)
        return Error(Errc::connection_closed, transport::failure_reason(*conn_, c[i].status));
      if (c[i].opcode == transport::WcOpcode::recv && c[i].wr_id == 0) return ok_status();
    }
    if (!conn_->healthy()) return conn_->error();
    if (deadline.expired())
      return Error(Errc::timeout, "the replica never said it was ready; is it a read server?");
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool ReplicaLink::can_send() const noexcept {
  return failure_.empty() && in_flight_ < depth_ && !free_tx_.empty();
}

void ReplicaLink::release(uint32_t slot) noexcept {
  transport::RecvBuffer b{kFirstSlotWrId + slot,
                          rx_.data() + size_t{slot} * hello_.max_response_bytes,
                          hello_.max_response_bytes, rx_mr_->region().keys.lkey};
  if (conn_->post_recv_buffers({&b, 1}) != transport::PostStatus::ok && failure_.empty())
    failure_ = conn_->healthy() ? "could not post a response buffer" : conn_->error().message();
}

bool ReplicaLink::send(const RequestHeader& h, std::span<const std::string_view> keys) noexcept {
  if (!can_send()) return false;
  const uint32_t tx = free_tx_.back();
  uint8_t* at = tx_.data() + size_t{tx} * hello_.max_request_bytes;
  const size_t n = encode_request(h, keys, std::span(at, hello_.max_request_bytes));
  if (n == 0) return false;
  transport::SendRequest s{tx, at, static_cast<uint32_t>(n), tx_mr_->region().keys.lkey, true};
  if (conn_->post_sends({&s, 1}) != transport::PostStatus::ok) {
    failure_ = conn_->healthy() ? "could not post a request" : conn_->error().message();
    return false;
  }
  free_tx_.pop_back();
  ++in_flight_;
  return true;
}

bool ReplicaLink::poll(std::vector<Response>& out) {
  if (!failure_.empty()) return false;
  transport::Completion c[32];
  const size_t n = conn_->poll(c);
  for (size_t i = 0; i < n; ++i) {
    if (c[i].status != transport::WcStatus::success) {
      failure_ = transport::failure_reason(*conn_, c[i].status);
      return false;
    }
    if (c[i].opcode == transport::WcOpcode::send) {
      free_tx_.push_back(static_cast<uint32_t>(c[i].wr_id));
    } else if (c[i].opcode == transport::WcOpcode::recv && c[i].wr_id >= kFirstSlotWrId) {
      const auto slot = static_cast<uint32_t>(c[i].wr_id - kFirstSlotWrId);
      if (in_flight_ > 0) --in_flight_;
      out.push_back(Response{
          slot, std::span<const uint8_t>(rx_.data() + size_t{slot} * hello_.max_response_bytes,
                                         c[i].byte_len)});
    }
  }
  if (!conn_->healthy()) {
    failure_ = conn_->error().message();
    return false;
  }
  return true;
}

std::string ReplicaLink::error() const {
  return failure_;
}

}  // namespace rdmarepl::reads
