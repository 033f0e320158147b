// RDMA CM set-up. Our QP is created by us on the transport's PD (not by rdma_create_qp, whose
// context would be librdmacm's own), so both sides drive the QP through the states with
// rdma_init_qp_attr: the passive side goes to RTR before rdma_accept and to RTS on
// ESTABLISHED; the active side goes to RTR and RTS on CONNECT_RESPONSE, then rdma_establish.
#include "rdmarepl/transport/verbs/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport::verbs {
namespace {

constexpr uint8_t kMagic = 'R';
constexpr uint8_t kVersion = 1;
constexpr int kResolveTimeoutMs = 2000;

std::vector<uint8_t> encode_regions(const std::vector<RemoteRegion>& regions) {
  std::vector<uint8_t> out(4 + regions.size() * RemoteRegion::kWireSize, 0);
  out[0] = kMagic;
  out[1] = kVersion;
  out[2] = static_cast<uint8_t>(regions.size());
  for (size_t i = 0; i < regions.size(); ++i)
    regions[i].serialize(out.data() + 4 + i * RemoteRegion::kWireSize);
  return out;
}

Result<std::vector<RemoteRegion>> decode_regions(std::span<const uint8_t> in,
                                                 std::string_view who) {
  if (in.size() < 4 || in[0] != kMagic || in[1] != kVersion) {
    return Error(Errc::protocol_error,
                 fmt::format("{}: the RDMA CM private data is not an rdmarepl ring descriptor "
                             "list ({} bytes); is the peer an rdmarepl verbs endpoint in CM mode?",
                             who, in.size()));
  }
  const size_t n = in[2];
  // The CM pads private data, so it may be longer than what was sent, never shorter.
  if (in.size() < 4 + n * RemoteRegion::kWireSize) {
    return Error(
        Errc::protocol_error,
        fmt::format("{}: private data announces {} regions but has {} bytes", who, n, in.size()));
  }
  std::vector<RemoteRegion> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(RemoteRegion::deserialize(in.data() + 4 + i * RemoteRegion::kWireSize));
  return out;
}

Status check_options(const ConnectionOptions& o, size_t max_regions) {
  if (!o.pre_shared_key.empty() || !o.app_data.empty() || o.regions.size() > max_regions) {
    return Error(Errc::unsupported,
                 fmt::format("RDMA CM mode carries only up to {} ring descriptors (got {}), no "
                             "pre-shared key ({}) and no app_data ({} bytes); use the TCP "
                             "bootstrap (use_rdma_cm=false) for those",
                             max_regions, o.regions.size(),
                             o.pre_shared_key.empty() ? "none" : "set", o.app_data.size()));
  }
  return {};
}

Result<sockaddr_storage> resolve(const Endpoint& where) {
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

Result<CmChannelHandle> make_channel() {
  CmChannelHandle ch(rdma_create_event_channel());
  if (!ch)
    return errno_error(errno, "rdma_create_event_channel (RDMA CM; /dev/infiniband/rdma_cm)");
  int flags = fcntl(ch->fd, F_GETFL);
  if (fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return errno_error(errno, "fcntl(O_NONBLOCK)");
  return ch;
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

class CmListener final : public Listener {
 public:
  CmListener(std::shared_ptr<TransportState> state, CmChannelHandle ch, CmIdHandle id,
             Endpoint local)
      : state_(std::move(state)),
        channel_(std::move(ch)),
        id_(std::move(id)),
        local_(std::move(local)) {}

  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    RDMAREPL_TRY(check_options(options, kCmAcceptRegions));
    auto deadline = Deadline::after(timeout);
    auto req = expect(channel_.get(), RDMA_CM_EVENT_CONNECT_REQUEST, deadline,
                      fmt::format("RDMA CM listener {}", local_.to_string()));
    if (!req) return req.error();
    CmIdHandle child(req->id);
    auto ch = make_channel();
    if (!ch) {
      (void)rdma_reject(child.get(), nullptr, 0);
      return ch.error();
    }
    // The child's events (ESTABLISHED, DISCONNECTED) go to a channel of its own.
    if (rdma_migrate_id(child.get(), ch->get()) != 0) {
      (void)rdma_reject(child.get(), nullptr, 0);
      return errno_error(errno, "rdma_migrate_id");
    }
    auto conn = VerbsConnection::establish_cm_passive(state_, std::move(*ch), std::move(child),
                                                      req->private_data, options, deadline);
    if (!conn) return conn.error();
    return std::unique_ptr<Connection>(std::move(*conn));
  }
  [[nodiscard]] Endpoint local_endpoint() const override { return local_; }

 private:
  std::shared_ptr<TransportState> state_;
  CmChannelHandle channel_;
  CmIdHandle id_;  // destroyed before its channel
  Endpoint local_;
};

}  // namespace

Status VerbsConnection::modify_from_cm(ibv_qp_state target) {
  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = target;
  if (rdma_init_qp_attr(cm_id_.get(), &attr, &mask) != 0) {
    return errno_error(errno,
                       fmt::format("{}: rdma_init_qp_attr({})", name_, qp_state_name(target)));
  }
  const QpTuning& t = state_->options.qp;
  if (target == IBV_QPS_INIT)
    attr.qp_access_flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
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
                        name_, qp_->qp_num, qp_state_name(target), mtu_name(attr.path_mtu),
                        attr.dest_qp_num, attr.rq_psn, attr.sq_psn, attr.ah_attr.grh.sgid_index));
  }
  return {};
}

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::establish_cm_passive(
    std::shared_ptr<TransportState> state, CmChannelHandle channel, CmIdHandle id,
    std::span<const uint8_t> request, const ConnectionOptions& options, Deadline deadline) {
  std::unique_ptr<VerbsConnection> c(new VerbsConnection(std::move(state)));
  c->cm_channel_ = std::move(channel);
  c->cm_id_ = std::move(id);
  char addr[INET6_ADDRSTRLEN] = "?";
  auto* peer = reinterpret_cast<sockaddr_in*>(rdma_get_peer_addr(c->cm_id_.get()));
  inet_ntop(AF_INET, &peer->sin_addr, addr, sizeof addr);
  c->peer_.address = fmt::format("{}:{}", addr, ntohs(rdma_get_dst_port(c->cm_id_.get())));
  c->peer_.node_id = c->peer_.address;
  c->name_ = fmt::format("verbs (RDMA CM) connection with {}", c->peer_.address);
  auto reject = [&](Error e) {
    (void)rdma_reject(c->cm_id_.get(), nullptr, 0);
    return e;
  };
  auto regions = decode_regions(request, c->name_);
  if (!regions) return reject(regions.error());
  c->peer_.regions = std::move(*regions);
  if (auto st = same_device(*c->state_, c->cm_id_.get(), c->name_); !st) return reject(st.error());
  if (auto st = c->create_resources(options); !st) return reject(st.error());
  if (auto st = c->modify_from_cm(IBV_QPS_INIT); !st) return reject(st.error());
  if (auto st = c->modify_from_cm(IBV_QPS_RTR); !st) return reject(st.error());
  if (auto st = c->post_initial_recvs(options); !st) return reject(st.error());
  const auto mine = encode_regions(options.regions);
  rdma_conn_param param{};
  param.private_data = mine.data();
  param.private_data_len = static_cast<uint8_t>(mine.size());
  param.qp_num = c->qp_->qp_num;
  param.responder_resources = c->state_->options.qp.max_rd_atomic;
  param.initiator_depth = c->state_->options.qp.max_rd_atomic;
  param.retry_count = c->state_->options.qp.retry_cnt;
  param.rnr_retry_count = c->state_->options.qp.rnr_retry;
  if (rdma_accept(c->cm_id_.get(), &param) != 0)
    return errno_error(errno, c->name_ + ": rdma_accept");
  auto est = expect(c->cm_channel_.get(), RDMA_CM_EVENT_ESTABLISHED, deadline, c->name_);
  if (!est) return est.error();
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_RTS));
  return c;
}

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::establish_cm_active(
    std::shared_ptr<TransportState> state, CmChannelHandle channel, CmIdHandle id,
    const ConnectionOptions& options, Deadline deadline) {
  std::unique_ptr<VerbsConnection> c(new VerbsConnection(std::move(state)));
  c->cm_channel_ = std::move(channel);
  c->cm_id_ = std::move(id);
  char addr[INET6_ADDRSTRLEN] = "?";
  auto* peer = reinterpret_cast<sockaddr_in*>(rdma_get_peer_addr(c->cm_id_.get()));
  inet_ntop(AF_INET, &peer->sin_addr, addr, sizeof addr);
  c->peer_.address = fmt::format("{}:{}", addr, ntohs(rdma_get_dst_port(c->cm_id_.get())));
  c->peer_.node_id = c->peer_.address;
  c->name_ = fmt::format("verbs (RDMA CM) connection to {}", c->peer_.address);
  RDMAREPL_TRY(same_device(*c->state_, c->cm_id_.get(), c->name_));
  RDMAREPL_TRY(c->create_resources(options));
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_INIT));
  RDMAREPL_TRY(c->post_initial_recvs(options));
  const auto mine = encode_regions(options.regions);
  rdma_conn_param param{};
  param.private_data = mine.data();
  param.private_data_len = static_cast<uint8_t>(mine.size());
  param.qp_num = c->qp_->qp_num;
  param.responder_resources = c->state_->options.qp.max_rd_atomic;
  param.initiator_depth = c->state_->options.qp.max_rd_atomic;
  param.retry_count = c->state_->options.qp.retry_cnt;
  param.rnr_retry_count = c->state_->options.qp.rnr_retry;
  if (rdma_connect(c->cm_id_.get(), &param) != 0)
    return errno_error(errno, c->name_ + ": rdma_connect");
  auto resp = expect(c->cm_channel_.get(), RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, c->name_);
  if (!resp) return resp.error();
  auto regions = decode_regions(resp->private_data, c->name_);
  if (!regions) return regions.error();
  c->peer_.regions = std::move(*regions);
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_RTR));
  RDMAREPL_TRY(c->modify_from_cm(IBV_QPS_RTS));
  if (rdma_establish(c->cm_id_.get()) != 0)
    return errno_error(errno, c->name_ + ": rdma_establish");
  return c;
}

Result<std::unique_ptr<Listener>> cm_listen(std::shared_ptr<TransportState> state,
                                            const Endpoint& where) {
  auto addr = resolve(where);
  if (!addr) return addr.error();
  auto ch = make_channel();
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

Result<std::unique_ptr<Connection>> cm_connect(std::shared_ptr<TransportState> state,
                                               const Endpoint& where,
                                               const ConnectionOptions& options) {
  RDMAREPL_TRY(check_options(options, kCmConnectRegions));
  auto deadline = Deadline::after(options.connect_timeout);
  auto addr = resolve(where);
  if (!addr) return addr.error();
  auto ch = make_channel();
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
