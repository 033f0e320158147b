// The libibverbs transport: RC queue pairs, RDMA Write-with-Immediate, zero-length receives.
// Connections are set up over the shared TCP bootstrap handshake; see docs/verbs.md.
#pragma once

#include <memory>
#include <vector>

#include "rdmarepl/transport/transport.h"
#include "transport/verbs/connection.h"
#include "transport/verbs/options.h"

namespace rdmarepl::transport::verbs {

// A registration, split into several MRs when it is larger than the device's max_mr_size.
// region() describes the first MR; segments() all of them (each with its own keys).
class VerbsMemoryRegion final : public MemoryRegion {
 public:
  VerbsMemoryRegion(std::shared_ptr<TransportState> state, std::vector<MrHandle> mrs,
                    Access access);
  [[nodiscard]] const RegisteredRegion& region() const noexcept override { return region_; }
  [[nodiscard]] const std::vector<RegisteredRegion>& segments() const noexcept { return segments_; }
  // The keys covering [addr, addr + length), or nullptr when that range crosses a segment
  // boundary or lies outside the registration.
  [[nodiscard]] const RegisteredRegion* segment_for(const void* addr, size_t length) const noexcept;

 private:
  // MRs before the state: deregistered while the PD still exists.
  std::shared_ptr<TransportState> state_;
  std::vector<MrHandle> mrs_;
  std::vector<RegisteredRegion> segments_;
  RegisteredRegion region_;
};

class VerbsTransport final : public Transport {
 public:
  // Opens the device named in options.device (or the first with an active port).
  // Errc::no_device when there is none: the message says what was looked for and found.
  static Result<std::unique_ptr<VerbsTransport>> create(const VerbsOptions& options = {});

  [[nodiscard]] std::string_view name() const noexcept override { return "verbs"; }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, size_t length,
                                                        Access access) override;
  Result<RegisteredRegion> register_raw(void* addr, size_t length, Access access) override;
  void deregister_raw(const RegisteredRegion& region) noexcept override;
  Result<std::unique_ptr<Listener>> listen(const Endpoint& where) override;
  Result<std::unique_ptr<Connection>> connect(const Endpoint& where,
                                              const ConnectionOptions& options) override;

  [[nodiscard]] const Device& device() const noexcept { return *state_->device; }
  [[nodiscard]] const VerbsOptions& options() const noexcept { return state_->options; }
  // The device's asynchronous events as read so far (port errors, fatal QP events).
  [[nodiscard]] const AsyncEventMonitor& async_events() const noexcept {
    return state_->async_events;
  }
  // The largest single MR this transport registers (the device limit or the override).
  [[nodiscard]] size_t max_mr_bytes() const noexcept;

 private:
  explicit VerbsTransport(std::shared_ptr<TransportState> state) : state_(std::move(state)) {}
  std::shared_ptr<TransportState> state_;
};

// ibv access flags for `access` (REMOTE_WRITE implies LOCAL_WRITE, as verbs requires).
int to_ibv_access(Access access) noexcept;

}  // namespace rdmarepl::transport::verbs
