// Control plane of the TCP transport: registration, listening, connecting, handshake.
#include "rdmarepl/transport/tcp/tcp_transport.h"

#include <fmt/format.h>

#include <algorithm>

#include "registry.h"
#include "tcp_connection.h"
#include "transport/bootstrap/admission.h"
#include "transport/bootstrap/handshake.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/socket_arrivals.h"

namespace rdmarepl::transport::tcp {
namespace {

class TcpMemoryRegion final : public MemoryRegion {
 public:
  TcpMemoryRegion(std::shared_ptr<Registry> registry, RegisteredRegion region)
      : registry_(std::move(registry)), region_(region) {}
  ~TcpMemoryRegion() override { registry_->remove(region_); }
  TcpMemoryRegion(const TcpMemoryRegion&) = delete;
  TcpMemoryRegion& operator=(const TcpMemoryRegion&) = delete;
  [[nodiscard]] const RegisteredRegion& region() const noexcept override { return region_; }

 private:
  std::shared_ptr<Registry> registry_;
  RegisteredRegion region_;
};

Status check_options(const ConnectionOptions& o) {
  auto depth_ok = [](uint32_t d) { return d >= 1 && d <= TcpConnection::kMaxQueueDepth; };
  if (!depth_ok(o.send_queue_depth) || !depth_ok(o.recv_queue_depth)) {
    return Error(
        Errc::invalid_argument,
        fmt::format("queue depths must be 1..{}, got send {} / recv {}",
                    TcpConnection::kMaxQueueDepth, o.send_queue_depth, o.recv_queue_depth));
  }
  if (o.app_data.size() > bootstrap::kMaxAppDataBytes ||
      o.node_id.size() > bootstrap::kMaxNodeIdBytes || o.regions.size() > bootstrap::kMaxRegions) {
    return Error(
        Errc::too_large,
        fmt::format("connection options too large: node_id {} bytes (max {}), app_data "
                    "{} bytes (max {}), {} regions (max {})",
                    o.node_id.size(), bootstrap::kMaxNodeIdBytes, o.app_data.size(),
                    bootstrap::kMaxAppDataBytes, o.regions.size(), bootstrap::kMaxRegions));
  }
  return ok_status();
}

// Runs the handshake on a connected socket and builds the connection.
Result<std::unique_ptr<Connection>> establish(bootstrap::Fd fd, bootstrap::Role role,
                                              const ConnectionOptions& options,
                                              std::shared_ptr<const Registry> registry,
                                              Deadline deadline) {
  bootstrap::Hello mine;
  mine.kind = TransportKind::tcp;
  mine.node_id = options.node_id;
  mine.regions = options.regions;
  mine.app_data = options.app_data;
  PeerInfo peer;
  auto theirs = bootstrap::exchange(fd.get(), mine, role, options.pre_shared_key, deadline,
                                    &peer.session_keys, &options.check_peer);
  if (!theirs) return std::move(theirs).error();
  peer.node_id = std::move(theirs->node_id);
  peer.address = bootstrap::peer_address(fd.get());
  peer.regions = std::move(theirs->regions);
  peer.app_data = std::move(theirs->app_data);
  auto conn = std::make_unique<TcpConnection>(std::move(fd), std::move(registry), std::move(peer),
                                              options.regions, options.send_queue_depth,
                                              options.recv_queue_depth);
  // Frames are only read when the owner polls, so posting here is as early as needed.
  if (options.initial_recvs > 0 && conn->post_recvs(options.initial_recvs, 0) != PostStatus::ok) {
    return Error(Errc::invalid_argument,
                 fmt::format("initial_recvs {} exceeds recv_queue_depth {}; raise "
                             "recv_queue_depth or post fewer",
                             options.initial_recvs, options.recv_queue_depth));
  }
  return std::unique_ptr<Connection>(std::move(conn));
}

class TcpListener final : public Listener {
 public:
  TcpListener(bootstrap::Fd fd, Endpoint local, std::shared_ptr<const Registry> registry)
      : fd_(std::move(fd)),
        local_(std::move(local)),
        registry_(std::move(registry)),
        admission_(std::make_unique<bootstrap::SocketArrivals>(fd_.get()), local_.to_string()) {}

  // Several threads may call this at once (bootstrap::Admission hands each a peer that
  // spoke); the handshake must end connect_timeout after the peer was accepted.
  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    RDMAREPL_TRY(check_options(options));
    return admission_.accept_one(
        options, timeout, [&](bootstrap::Admitted& peer, const ConnectionOptions& o) {
          return establish(bootstrap::take_socket(peer), bootstrap::Role::responder, o, registry_,
                           peer.deadline);
        });
  }

  [[nodiscard]] Endpoint local_endpoint() const override { return local_; }
  [[nodiscard]] bool accepts_concurrently() const noexcept override { return true; }

 private:
  bootstrap::Fd fd_;
  Endpoint local_;
  std::shared_ptr<const Registry> registry_;
  bootstrap::Admission admission_;
};

}  // namespace

TcpTransport::TcpTransport() : registry_(std::make_shared<Registry>()) {}
TcpTransport::~TcpTransport() = default;

Result<std::unique_ptr<MemoryRegion>> TcpTransport::register_memory(void* addr, size_t length,
                                                                    Access access) {
  auto r = registry_->add(addr, length, access);
  if (!r) return std::move(r).error();
  return std::unique_ptr<MemoryRegion>(new TcpMemoryRegion(registry_, *r));
}

Result<RegisteredRegion> TcpTransport::register_raw(void* addr, size_t length, Access access) {
  return registry_->add(addr, length, access);
}

void TcpTransport::deregister_raw(const RegisteredRegion& region) noexcept {
  registry_->remove(region);
}

size_t TcpTransport::registration_count() const {
  return registry_->size();
}

Result<std::unique_ptr<Listener>> TcpTransport::listen(const Endpoint& where) {
  auto fd = bootstrap::listen_tcp(where);
  if (!fd) return std::move(fd).error();
  auto local = bootstrap::local_endpoint(fd->get());
  if (!local) return std::move(local).error();
  return std::unique_ptr<Listener>(new TcpListener(std::move(*fd), *local, registry_));
}

Result<std::unique_ptr<Connection>> TcpTransport::connect(const Endpoint& where,
                                                          const ConnectionOptions& options) {
  RDMAREPL_TRY(check_options(options));
  auto deadline = Deadline::after(options.connect_timeout);
  auto fd = bootstrap::connect_tcp(where, deadline);
  if (!fd) return std::move(fd).error();
  return establish(std::move(*fd), bootstrap::Role::initiator, options, registry_, deadline);
}

}  // namespace rdmarepl::transport::tcp
