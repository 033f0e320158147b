// The TCP transport: the one-sided semantics of RC verbs over one TCP connection per
// Connection. A peer's write-with-immediate is placed straight into our registered memory
// after its rkey and range were checked; see docs/transport.md for the design and
// docs/wire_format.md for the frames.
#pragma once

#include <memory>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::tcp {

class Registry;

class TcpTransport final : public Transport {
 public:
  TcpTransport();
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  [[nodiscard]] std::string_view name() const noexcept override { return "tcp"; }

  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, size_t length,
                                                        Access access) override;
  Result<RegisteredRegion> register_raw(void* addr, size_t length, Access access) override;
  void deregister_raw(const RegisteredRegion& region) noexcept override;

  Result<std::unique_ptr<Listener>> listen(const Endpoint& where) override;
  Result<std::unique_ptr<Connection>> connect(const Endpoint& where,
                                              const ConnectionOptions& options) override;

  // Live registrations (for tests and leak checks).
  [[nodiscard]] size_t registration_count() const;

 private:
  // Shared with connections and region owners, which may outlive the transport object.
  std::shared_ptr<Registry> registry_;
};

}  // namespace rdmarepl::transport::tcp
