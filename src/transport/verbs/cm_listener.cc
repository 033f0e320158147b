// The RDMA CM listener. Connection requests are admitted to the handshake like TCP
// connections (bootstrap::Admission, docs/transport.md "Handshake admission"): a request
// the limits refuse is rejected at once; an admitted one is accepted at once (its queue
// pair, CQs and handshake buffers created, the QP in RTR, rdma_accept) and then held,
// without a thread, until the peer's first handshake write completes a receive on the QP
// (an event on the receive CQ's completion channel) or the peer leaves (an event on the
// connection's CM channel); only then does an accept() caller bring the QP to RTS and run
// the handshake, with what is left of connect_timeout from the request's arrival. A held
// connection still silent at its deadline is disconnected and destroyed (QP, then CQs, then
// channels and CM id: the order of transport/verbs/handles.h).
#include <arpa/inet.h>
#include <fmt/format.h>

#include <cerrno>
#include <vector>

#include "rdmarepl/core/log.h"
#include "transport/bootstrap/admission.h"
#include "transport/verbs/cm.h"
#include "transport/verbs/cm_pipe.h"

namespace rdmarepl::transport::verbs {
namespace {

// One connection request, from its arrival until its handshake starts.
class HeldCmRequest final : public bootstrap::Pending {
 public:
  HeldCmRequest(std::shared_ptr<TransportState> state, CmIdHandle id,
                std::vector<uint8_t> request) noexcept
      : state_(std::move(state)), id_(std::move(id)), request_(std::move(request)) {}
  ~HeldCmRequest() override {
    // Refused, or not accepted: the peer is told at once (an accepted connection is
    // disconnected by its own destructor).
    if (id_) (void)rdma_reject(id_.get(), nullptr, 0);
  }
  HeldCmRequest(const HeldCmRequest&) = delete;
  HeldCmRequest& operator=(const HeldCmRequest&) = delete;

  Status hold(const ConnectionOptions& o) override {
    auto ch = cm_make_channel();
    if (!ch) return ch.error();
    // The child's events (ESTABLISHED, DISCONNECTED) go to a channel of its own.
    if (rdma_migrate_id(id_.get(), ch->get()) != 0)
      return errno_error(errno, "rdma_migrate_id of a connection request");
    events_ = ch->get();
    auto conn =
        VerbsConnection::cm_accept(state_, std::move(*ch), std::move(id_), request_, o, pipe_);
    if (!conn) return conn.error();
    conn_ = std::move(*conn);
    completions_ = conn_->recv_cq()->channel;
    return {};
  }

  void watch(std::vector<pollfd>& out) const override {
    out.push_back(pollfd{completions_->fd, POLLIN, 0});
    out.push_back(pollfd{events_->fd, POLLIN, 0});
  }

  bool spoke(std::span<const pollfd> polled) override {
    bool wrote = false;
    if ((polled[0].revents & POLLIN) != 0) {
      // Only the receive CQ is armed: this is the peer's first write (the pipe reaps it).
      ibv_cq* cq = nullptr;
      void* ctx = nullptr;
      if (ibv_get_cq_event(completions_, &cq, &ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
        wrote = true;
      }
    }
    // The channel is non-blocking. ESTABLISHED (the peer's ready-to-use) is remembered for
    // the handshake; any other event ends the connection before its handshake.
    rdma_cm_event* ev = nullptr;
    while (gone_.empty() && rdma_get_cm_event(events_, &ev) == 0) {
      const auto type = ev->event;
      rdma_ack_cm_event(ev);
      if (type == RDMA_CM_EVENT_ESTABLISHED)
        established_ = true;
      else
        gone_ = rdma_event_str(type);
    }
    return wrote || !gone_.empty();
  }

  // After spoke(): RTS and the handshake until `deadline`.
  Result<std::unique_ptr<VerbsConnection>> complete(const ConnectionOptions& o, Deadline deadline) {
    if (!gone_.empty())
      return Error(Errc::connection_closed,
                   fmt::format("verbs (RDMA CM) connection with {}: the peer disconnected "
                               "during the handshake ({})",
                               conn_->peer().address, gone_));
    RDMAREPL_TRY(conn_->cm_complete(*pipe_, established_, o, deadline));
    return std::move(conn_);
  }

 private:
  std::shared_ptr<TransportState> state_;
  CmIdHandle id_;  // until hold(): then conn_ owns it
  std::vector<uint8_t> request_;
  std::unique_ptr<VerbsConnection> conn_;
  std::unique_ptr<CmPipe> pipe_;             // its buffers are registered on the transport's PD
  rdma_event_channel* events_ = nullptr;     // conn_'s CM channel
  ibv_comp_channel* completions_ = nullptr;  // conn_'s completion channel
  bool established_ = false;
  std::string gone_;  // the CM event that ended the connection before its handshake
};

// Connection requests from the listener's event channel (non-blocking).
class CmRequests final : public bootstrap::Arrivals {
 public:
  CmRequests(std::shared_ptr<TransportState> state, rdma_event_channel* channel,
             std::string local) noexcept
      : state_(std::move(state)), channel_(channel), local_(std::move(local)) {}
  [[nodiscard]] int fd() const noexcept override { return channel_->fd; }

  Arrival next() override {
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(channel_, &ev) == 0) {
      const auto type = ev->event;
      if (type != RDMA_CM_EVENT_CONNECT_REQUEST) {
        rdma_ack_cm_event(ev);
        log::debug("rdmarepl listener {}: ignored RDMA CM event {}", local_, rdma_event_str(type));
        continue;
      }
      std::vector<uint8_t> request;
      const auto& conn = ev->param.conn;
      if (conn.private_data != nullptr && conn.private_data_len > 0) {
        const auto* p = static_cast<const uint8_t*>(conn.private_data);
        request.assign(p, p + conn.private_data_len);
      }
      CmIdHandle id(ev->id);
      rdma_ack_cm_event(ev);
      std::string address = cm_peer_address(id.get());
      return Arrival{std::make_unique<HeldCmRequest>(state_, std::move(id), std::move(request)),
                     std::move(address)};
    }
    return {};  // EAGAIN: nothing waiting
  }

 private:
  std::shared_ptr<TransportState> state_;
  rdma_event_channel* channel_;
  std::string local_;
};

class CmListener final : public Listener {
 public:
  CmListener(std::shared_ptr<TransportState> state, CmChannelHandle ch, CmIdHandle id,
             Endpoint local)
      : state_(std::move(state)),
        channel_(std::move(ch)),
        id_(std::move(id)),
        local_(std::move(local)),
        admission_(std::make_unique<CmRequests>(state_, channel_.get(), local_.to_string()),
                   local_.to_string()) {}

  // Several threads may call this at once (bootstrap::Admission hands each a request whose
  // peer wrote); the handshake must end connect_timeout after the request arrived.
  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    auto conn = admission_.accept_one(
        options, timeout, [](bootstrap::Admitted& peer, const ConnectionOptions& o) {
          return static_cast<HeldCmRequest&>(*peer.conn).complete(o, peer.deadline);
        });
    if (!conn) return conn.error();
    return std::unique_ptr<Connection>(std::move(*conn));
  }
  [[nodiscard]] Endpoint local_endpoint() const override { return local_; }
  [[nodiscard]] bool accepts_concurrently() const noexcept override { return true; }

 private:
  std::shared_ptr<TransportState> state_;
  CmChannelHandle channel_;
  CmIdHandle id_;  // destroyed before its channel
  Endpoint local_;
  // Destroyed first: held requests not yet migrated are on channel_.
  bootstrap::Admission admission_;
};

}  // namespace

Result<std::unique_ptr<Listener>> cm_listen(std::shared_ptr<TransportState> state,
                                            const Endpoint& where) {
  auto addr = cm_resolve(where);
  if (!addr) return addr.error();
  auto ch = cm_make_channel();
  if (!ch) return ch.error();
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch->get(), &raw, nullptr, RDMA_PS_TCP) != 0)
    return errno_error(errno, "rdma_create_id");
  CmIdHandle id(raw);
  if (rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&*addr)) != 0)
    return errno_error(errno, fmt::format("rdma_bind_addr({})", where.to_string()));
  if (rdma_listen(id.get(), 64) != 0)
    return errno_error(errno, fmt::format("rdma_listen({})", where.to_string()));
  Endpoint local{where.host, ntohs(rdma_get_src_port(id.get()))};
  return std::unique_ptr<Listener>(
      new CmListener(std::move(state), std::move(*ch), std::move(id), std::move(local)));
}

}  // namespace rdmarepl::transport::verbs
