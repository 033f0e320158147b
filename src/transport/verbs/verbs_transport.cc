#include "transport/verbs/verbs_transport.h"

#include <fmt/format.h>

#include <cerrno>

#include "rdmarepl/core/log.h"
#include "transport/bootstrap/admission.h"
#include "transport/bootstrap/socket_arrivals.h"
#include "transport/verbs/cm.h"

namespace rdmarepl::transport::verbs {
namespace {

class VerbsListener final : public Listener {
 public:
  VerbsListener(std::shared_ptr<TransportState> state, bootstrap::Fd fd, Endpoint local)
      : state_(std::move(state)),
        fd_(std::move(fd)),
        local_(std::move(local)),
        admission_(std::make_unique<bootstrap::SocketArrivals>(fd_.get()), local_.to_string()) {}

  // Several threads may call this at once (bootstrap::Admission hands each a peer that
  // spoke); the handshake must end connect_timeout after the peer was accepted.
  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    auto conn = admission_.accept_one(
        options, timeout, [&](bootstrap::Admitted& peer, const ConnectionOptions& o) {
          return VerbsConnection::establish(state_, bootstrap::take_socket(peer),
                                            bootstrap::Role::responder, o, peer.deadline);
        });
    if (!conn) return conn.error();
    return std::unique_ptr<Connection>(std::move(*conn));
  }
  [[nodiscard]] Endpoint local_endpoint() const override { return local_; }
  [[nodiscard]] bool accepts_concurrently() const noexcept override { return true; }

 private:
  std::shared_ptr<TransportState> state_;
  bootstrap::Fd fd_;
  Endpoint local_;
  bootstrap::Admission admission_;
};

std::string to_string(Access a) {
  std::string s;
  if (has(a, Access::local_write)) s += "local_write ";
  if (has(a, Access::remote_write)) s += "remote_write ";
  if (has(a, Access::remote_read)) s += "remote_read ";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "none" : s;
}

}  // namespace

int to_ibv_access(Access access) noexcept {
  int flags = 0;
  if (has(access, Access::local_write)) flags |= IBV_ACCESS_LOCAL_WRITE;
  if (has(access, Access::remote_write)) flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  if (has(access, Access::remote_read)) flags |= IBV_ACCESS_REMOTE_READ;
  return flags;
}

VerbsMemoryRegion::VerbsMemoryRegion(std::shared_ptr<TransportState> state,
                                     std::vector<MrHandle> mrs, Access access)
    : state_(std::move(state)), mrs_(std::move(mrs)) {
  for (const auto& mr : mrs_)
    segments_.push_back(
        RegisteredRegion{mr->addr, mr->length, {mr->lkey, mr->rkey}, access, mr.get()});
  region_ = segments_.front();
  // The first segment's keys, but the whole extent: callers that need per-segment keys use
  // segments() / segment_for().
  region_.length = 0;
  for (const auto& s : segments_) region_.length += s.length;
}

const RegisteredRegion* VerbsMemoryRegion::segment_for(const void* addr,
                                                       size_t length) const noexcept {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (const auto& s : segments_) {
    const auto b = reinterpret_cast<uintptr_t>(s.addr);
    if (a >= b && a - b <= s.length && length <= s.length - (a - b)) return &s;
  }
  return nullptr;
}

Result<std::unique_ptr<VerbsTransport>> VerbsTransport::create(const VerbsOptions& options) {
  auto device = Device::open(options.device);
  if (!device) return device.error();
  auto state = std::make_shared<TransportState>();
  state->device = std::move(*device);
  state->options = options;
  if (options.use_srq) {
    ibv_srq_init_attr attr{};
    attr.attr.max_wr = options.srq_depth;
    attr.attr.max_sge = 1;
    state->srq.reset(ibv_create_srq(state->device->pd(), &attr));
    if (!state->srq) {
      return errno_error(errno, fmt::format("ibv_create_srq({} entries) on {} (device max_srq_wr "
                                            "{})",
                                            options.srq_depth, state->device->name(),
                                            state->device->attr().max_srq_wr));
    }
  }
  RDMAREPL_TRY(state->async_events.start(*state->device));
  return std::unique_ptr<VerbsTransport>(new VerbsTransport(std::move(state)));
}

size_t VerbsTransport::max_mr_bytes() const noexcept {
  const size_t dev = static_cast<size_t>(state_->device->attr().max_mr_size);
  const size_t over = state_->options.max_mr_bytes;
  if (over != 0 && (dev == 0 || over < dev)) return over;
  return dev == 0 ? SIZE_MAX : dev;
}

Result<std::unique_ptr<MemoryRegion>> VerbsTransport::register_memory(void* addr, size_t length,
                                                                      Access access) {
  if (addr == nullptr || length == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("register_memory({}, {}): the range is empty", addr, length));
  }
  const size_t limit = max_mr_bytes();
  std::vector<MrHandle> mrs;
  auto* p = static_cast<uint8_t*>(addr);
  for (size_t off = 0; off < length;) {
    const size_t len = std::min(limit, length - off);
    MrHandle mr(ibv_reg_mr(state_->device->pd(), p + off, len, to_ibv_access(access)));
    if (!mr) {
      return errno_error(errno, fmt::format("ibv_reg_mr({}, {} bytes, {}) on {} (segment at "
                                            "offset {} of {})",
                                            static_cast<void*>(p + off), len, to_string(access),
                                            state_->device->name(), off, length));
    }
    mrs.push_back(std::move(mr));
    off += len;
  }
  if (mrs.size() > 1) {
    log::debug("verbs: registered {} bytes as {} MRs (max_mr_size {})", length, mrs.size(), limit);
  }
  return std::unique_ptr<MemoryRegion>(new VerbsMemoryRegion(state_, std::move(mrs), access));
}

Result<RegisteredRegion> VerbsTransport::register_raw(void* addr, size_t length, Access access) {
  if (addr == nullptr || length == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("register_raw({}, {}): the range is empty", addr, length));
  }
  if (length > max_mr_bytes()) {
    return Error(Errc::too_large,
                 fmt::format("register_raw: {} bytes exceed {}'s largest MR ({} bytes); use "
                             "register_memory(), which splits, or register smaller pools",
                             length, state_->device->name(), max_mr_bytes()));
  }
  ibv_mr* mr = ibv_reg_mr(state_->device->pd(), addr, length, to_ibv_access(access));
  if (mr == nullptr) {
    return errno_error(errno, fmt::format("ibv_reg_mr({}, {} bytes, {}) on {}", addr, length,
                                          to_string(access), state_->device->name()));
  }
  return RegisteredRegion{addr, length, {mr->lkey, mr->rkey}, access, mr};
}

void VerbsTransport::deregister_raw(const RegisteredRegion& region) noexcept {
  if (region.handle != nullptr) MrDeleter{}(static_cast<ibv_mr*>(region.handle));
}

Result<std::unique_ptr<Listener>> VerbsTransport::listen(const Endpoint& where) {
  if (state_->options.use_rdma_cm) return cm_listen(state_, where);
  auto fd = bootstrap::listen_tcp(where);
  if (!fd) return fd.error();
  auto local = bootstrap::local_endpoint(fd->get());
  if (!local) return local.error();
  return std::unique_ptr<Listener>(new VerbsListener(state_, std::move(*fd), std::move(*local)));
}

Result<std::unique_ptr<Connection>> VerbsTransport::connect(const Endpoint& where,
                                                            const ConnectionOptions& options) {
  if (state_->options.use_rdma_cm) return cm_connect(state_, where, options);
  const auto deadline = Deadline::after(options.connect_timeout);
  auto sock = bootstrap::connect_tcp(where, deadline);
  if (!sock) return sock.error();
  auto conn = VerbsConnection::establish(state_, std::move(*sock), bootstrap::Role::initiator,
                                         options, deadline);
  if (!conn) return conn.error();
  return std::unique_ptr<Connection>(std::move(*conn));
}

}  // namespace rdmarepl::transport::verbs
