// RDMA CM set-up. The CM private data carries only each side's handshake landing buffer;
// once the QP is connected, the bootstrap handshake (the same authenticated exchange as over
// TCP) runs over the QP itself (cm_pipe.h) and yields the peer's node id, regions and
// app_data. Our QP is created by us on the transport's PD (not by rdma_create_qp, whose
// context would be librdmacm's own), so both sides drive the QP through the states with
// rdma_init_qp_attr: the passive side goes to RTR before rdma_accept (its listener then
// holds it until the peer's first handshake write arrives, cm_listener.cc) and to RTS on
// ESTABLISHED; the active side goes to RTR and RTS on CONNECT_RESPONSE, then rdma_establish.
#include "transport/verbs/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "cm_pipe.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::transport::verbs {
namespace {

constexpr uint8_t kMagic = 'R';
constexpr uint8_t kVersion = 2;  // 1: ring descriptors in the private data, no handshake
constexpr size_t kPrivateBytes = 4 + RemoteRegion::kWireSize;
constexpr int kResolveTimeoutMs = 2000;

// The CM private data: magic u8 'R' | version u8 | handshake writes u8 | reserved u8 |
// landing buffer (RemoteRegion wire format, 16 bytes). docs/wire_format.md, "RDMA CM set-up".
std::array<uint8_t, kPrivateBytes> encode_private(const RemoteRegion& landing) {
  std::array<uint8_t, kPrivateBytes> out{};
  out[0] = kMagic;
  out[1] = kVersion;
  out[2] = static_cast<uint8_t>(kCmHandshakeWrites);
  landing.serialize(out.data() + 4);
  return out;
}

Result<RemoteRegion> decode_private(std::span<const uint8_t> in, std::string_view who) {
  // The CM pads private data, so it may be longer than what was sent, never shorter.
  if (in.size() < kPrivateBytes || in[0] != kMagic) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: the RDMA CM private data is not an rdmarepl connection "
                             "request ({} bytes); is the peer an rdmarepl verbs endpoint in CM "
                             "mode?",
                             who, in.size()));
  }
  if (in[1] != kVersion || in[2] != kCmHandshakeWrites) {
    return Error(Errc::unsupported,
                 fmt::format("{}: the peer speaks RDMA CM set-up version {} ({} handshake "
                             "writes), we speak version {} ({}); run the same rdmarepl release "
                             "on both nodes",
                             who, in[1], in[2], kVersion, kCmHandshakeWrites));
  }
  return RemoteRegion::deserialize(in.data() + 4);
}

rdma_conn_param conn_param(const TransportState& s, const ibv_qp& qp,
                           std::span<const uint8_t> private_data) {
  rdma_conn_param param{};
  param.private_data = private_data.data();
  param.private_data_len = static_cast<uint8_t>(private_data.size());
  param.qp_num = qp.qp_num;
  param.responder_resources = s.options.qp.max_rd_atomic;
  param.initiator_depth = s.options.qp.max_rd_atomic;
  param.retry_count = s.options.qp.retry_cnt;
  param.rnr_retry_count = s.options.qp.rnr_retry;
  return param;
}

struct Event {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  rdma_cm_id* id = nullptr;
  std::vector<uint8_t> private_data;
};

// Waits for the next CM event on a non-blocking channel.
Result<Event> next_event(rdma_event_channel* ch, Deadline deadline, std::string_view what) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev) == 0) {
      Event e{ev->event, ev->status, ev->id, {}};
      const auto& conn = ev->param.conn;
      if (conn.private_data != nullptr && conn.private_data_len > 0) {
        const auto* p = static_cast<const uint8_t*>(conn.private_data);
        e.private_data.assign(p, p + conn.private_data_len);
      }
      rdma_ack_cm_event(ev);
      return e;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno_error(errno, "rdma_get_cm_event");
    if (deadline.expired()) {
      return Error(Errc::timeout, fmt::format("{}: no RDMA CM event in time", what));
    }
    pollfd pfd{ch->fd, POLLIN, 0};
    (void)::poll(&pfd, 1, deadline.poll_timeout_ms());
  }
}

Result<Event> expect(rdma_event_channel* ch, rdma_cm_event_type want, Deadline deadline,
                     std::string_view what) {
  auto e = next_event(ch, deadline, what);
  if (!e) return e;
  if (e->type != want) {
    const Errc code = e->type == RDMA_CM_EVENT_REJECTED      ? Errc::connection_refused
                      : e->type == RDMA_CM_EVENT_UNREACHABLE ? Errc::timeout
                                                             : Errc::io_error;
    return Error(code, fmt::format("{}: expected RDMA CM event {}, got {} (status {}); check "
                                   "that the peer listens in CM mode at that address and that "
                                   "the address belongs to an RDMA device's interface",
                                   what, rdma_event_str(want), rdma_event_str(e->type), e->status));
  }
  return e;
}

Status same_device(const TransportState& s, rdma_cm_id* id, std::string_view what) {
  const char* cm_dev = id->verbs != nullptr ? ibv_get_device_name(id->verbs->device) : "?";
  if (s.device->name() != cm_dev) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: the address routes through RDMA device {}, but this transport "
                             "opened {}; name {} in the options or use another address",
                             what, cm_dev, s.device->name(), cm_dev));
  }
  return {};
}

}  // namespace

std::string cm_peer_address(rdma_cm_id* id) {
  char addr[INET6_ADDRSTRLEN] = "?";
  auto* peer = reinterpret_cast<sockaddr_in*>(rdma_get_peer_addr(id));
  inet_ntop(AF_INET, &peer->sin_addr, addr, sizeof addr);
  return fmt::format("{}:{}", addr, ntohs(rdma_get_dst_port(id)));
}

Result<sockaddr_storage> cm_resolve(const Endpoint& where) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(where.port);
  const char* host = where.host.empty() ? nullptr : where.host.c_str();
  if (host == nullptr) hints.ai_flags |= AI_PASSIVE;
  if (int rc = getaddrinfo(host, port.c_str(), &hints, &res); rc != 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("cannot resolve {}: {}", where.to_string(), gai_strerror(rc)));
  }
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return ss;
}

Result<CmChannelHandle> cm_make_channel() {
  CmChannelHandle ch(rdma_create_event_channel());
  if (!ch)
    return errno_error(errno, "rdma_create_event_channel (RDMA CM; /dev/infiniband/rdma_cm)");
  int flags = fcntl(ch->fd, F_GETFL);
  if (fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return errno_error(errno, "fcntl(O_NONBLOCK)");
  return ch;
}

Status VerbsConnection::modify_from_cm(ibv_qp_state target) {
  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = target;
  if (rdma_init_qp_attr(cm_id_.get(), &attr, &mask) != 0) {
    return errno_error(errno, fmt::format("{}: rdma_init_qp_attr({})", name_, to_string(target)));
  }
  const QpTuning& t = state_->options.qp;
  if (target == IBV_QPS_INIT)
    attr.qp_access_flags |=
        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
  if (target == IBV_QPS_RTR) {
    attr.min_rnr_timer = t.min_rnr_timer;
    mask |= IBV_QP_MIN_RNR_TIMER;
    path_mtu_ = attr.path_mtu;
  }
  if (target == IBV_QPS_RTS) {
    // Our tuning, not the CM's defaults (timeout 19, rnr_retry from the peer's accept).
    attr.timeout = t.timeout;
    attr.retry_cnt = t.retry_cnt;
    attr.rnr_retry = t.rnr_retry;
    local_psn_ = attr.sq_psn;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
  }
  if (int rc = ibv_modify_qp(qp_.get(), &attr, mask); rc != 0) {
    return errno_error(
        rc, fmt::format("{}: QP {:#x} -> {} with the CM's attributes failed (path "
                        "MTU {}, dest QPN {:#x}, rq PSN {:#x}, sq PSN {:#x}, sgid "
                        "index {})",
                        name_, qp_->qp_num, to_string(target), to_string(attr.path_mtu),
                        attr.dest_qp_num, attr.rq_psn, attr.sq_psn, attr.ah_attr.grh.sgid_index));
  }
  return {};
}

Result<std::unique_ptr<CmPipe>> VerbsConnection::cm_prepare(const ConnectionOptions& options) {
  handshake_recvs_ = kCmHandshakeWrites;
  RDMAREPL_TRY(same_device(*state_, cm_id_.get(), name_));
  RDMAREPL_TRY(create_resources(options));
  RDMAREPL_TRY(modify_from_cm(IBV_QPS_INIT));
  CmPipe::Queues q{state_->device->pd(), qp_.get(),      state_->srq.get(), send_cq_.get(),
                   recv_cq_.get(),       channel_.get(), cm_channel_.get()};
  auto pipe = CmPipe::create(q, name_);
  if (!pipe) return pipe.error();
  // After the pipe's receives: the handshake's writes consume those, the data path's these.
  RDMAREPL_TRY(post_initial_recvs(options));
  return pipe;
}

Status VerbsConnection::cm_handshake(CmPipe& pipe, bootstrap::Role role,
                                     const ConnectionOptions& options, Deadline deadline) {
  bootstrap::Hello hello;
  hello.kind = TransportKind::verbs;
  hello.node_id = options.node_id;
  hello.regions = options.regions;
  hello.app_data = options.app_data;
  auto theirs = bootstrap::exchange(pipe, hello, role, options.pre_shared_key, deadline,
                                    &peer_.session_keys, &options.check_peer);
  if (!theirs) return theirs.error();
  name_ = fmt::format("verbs (RDMA CM) connection with {} ({})", theirs->node_id, peer_.address);
  pipe.set_name(name_);
  RDMAREPL_TRY(pipe.finish(deadline));
  peer_.node_id = theirs->node_id;
  peer_.regions = std::move(theirs->regions);
  peer_.app_data = std::move(theirs->app_data);
  log::debug("{}: QP {:#x} in RTS over RDMA CM (path MTU {}, PSN {:#x})", name_, qp_->qp_num,
             to_string(path_mtu_), local_psn_);
  return {};
}

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::cm_accept(
    std::shared_ptr<TransportState> state, CmChannelHandle channel, CmIdHandle id,
    std::span<const uint8_t> request, const ConnectionOptions& options,
    std::unique_ptr<CmPipe>& pipe) {
  std::unique_ptr<VerbsConnection> c(new VerbsConnection(std::move(state)));
  c->cm_channel_ = std::move(channel);
  c->cm_id_ = std::move(id);
  c->peer_.address = cm_peer_address(c->cm_id_.get());
  c->peer_.node_id = c->peer_.address;
  c->name_ = fmt::format("verbs (RDMA CM) connection with {}", c->peer_.address);
  auto reject = [&](Error e) {
    (void)rdma_reject(c->cm_id_.get(), nullptr, 0);
    return e;
  };
  auto landing = decode_private(request, c->name_);
  if (!landing) return reject(landing.error());
  auto prepared = c->cm_prepare(options);
  if (!prepared) return reject(prepared.error());
  (*prepared)->set_peer_landing(*landing);
  if (auto st = c->modify_from_cm(IBV_QPS_RTR); !st) return reject(st.error());
  // Armed before the accept, after which alone the peer can write: its first handshake
  // write raises an event on the completion channel, which the listener polls.
  if (ibv_req_notify_cq(c->recv_cq_.get(), 0) != 0)
    return reject(errno_error(errno, c->name_ + ": ibv_req_notify_cq"));
  const auto mine = encode_private((*prepared)->landing());
  auto param = conn_param(*c->state_, *c->qp_, mine);
  if (rdma_accept(c->cm_id_.get(), &param) != 0)
    return errno_error(errno, c->name_ + ": rdma_accept");
  pipe = std::move(*prepared);
  return c;
}

Status VerbsConnection::cm_complete(CmPipe& pipe, bool established,
                                    const ConnectionOptions& options, Deadline deadline) {
  if (!established)
    RDMAREPL_TRY(expect(cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, deadline, name_));
  RDMAREPL_TRY(modify_from_cm(IBV_QPS_RTS));
  return cm_handshake(pipe, bootstrap::Role::responder, options, deadline);
}

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::establish_cm_active(
    std::shared_ptr<TransportState> state, CmChannelHandle channel, CmIdHandle id,
    const ConnectionOptions& options, Deadline deadline) {
  std::unique_ptr<VerbsConnection> c(new VerbsConnection(std::move(state)));
  c->cm_channel_ = std::move(channel);
  c->cm_id_ = std::move(id);
  c->peer_.address = cm_peer_address(c->cm_id_.get());
  c->peer_.node_id = c->peer_.address;
  c->name_ = fmt::format("verbs (RDMA CM) connection to {}", c->peer_.address);
  auto pipe = c->cm_prepare(options);
  if (!pipe) return pipe.error();
  const auto mine = encode_private((*pipe)->landing());
  auto param = conn_param(*c->state_, *c->qp_, mine);
  if (rdma_connect(c->cm_id_.get(), &param) != 0)
    return errno_error(errno, c->name_ + ": rdma_connect");
  auto resp = expect(c->cm_channel_.get(), RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, c->name_);
  if (!resp) return resp.error();
  auto landing = decode_private(resp->private_data, c->name_);
  if (!landing) return landing.error();
  (*pipe)->set_peer_landing(*landing);
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_RTR));
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_RTS));
  if (rdma_establish(c->cm_id_.get()) != 0)
    return errno_error(errno, c->name_ + ": rdma_establish");
  RDMAREPL_TRY(c->cm_handshake(**pipe, bootstrap::Role::initiator, options, deadline));
  return c;
}

Result<std::unique_ptr<Connection>> cm_connect(std::shared_ptr<TransportState> state,
                                               const Endpoint& where,
                                               const ConnectionOptions& options) {
  auto deadline = Deadline::after(options.connect_timeout);
  auto addr = cm_resolve(where);
  if (!addr) return addr.error();
  auto ch = cm_make_channel();
  if (!ch) return ch.error();
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch->get(), &raw, nullptr, RDMA_PS_TCP) != 0)
    return errno_error(errno, "rdma_create_id");
  CmIdHandle id(raw);
  const std::string what = fmt::format("RDMA CM connect to {}", where.to_string());
  if (rdma_resolve_addr(id.get(), nullptr, reinterpret_cast<sockaddr*>(&*addr),
                        kResolveTimeoutMs) != 0)
    return errno_error(errno, what + ": rdma_resolve_addr");
  RDMAREPL_TRY(expect(ch->get(), RDMA_CM_EVENT_ADDR_RESOLVED, deadline, what));
  if (rdma_resolve_route(id.get(), kResolveTimeoutMs) != 0)
    return errno_error(errno, what + ": rdma_resolve_route");
  RDMAREPL_TRY(expect(ch->get(), RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, what));
  auto conn = VerbsConnection::establish_cm_active(std::move(state), std::move(*ch), std::move(id),
                                                   options, deadline);
  if (!conn) return conn.error();
  return std::unique_ptr<Connection>(std::move(*conn));
}

}  // namespace rdmarepl::transport::verbs
