// The registration call the memory layer uses, injected so that the allocator runs (and is
// tested) without a NIC. transport::Transport::register_raw / deregister_raw fit it directly.
#pragma once

#include <cstddef>
#include <functional>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport {
class Transport;
}

namespace rdmarepl::memory {

class Counters;

struct Registrar {
  using RegisterFn =
      std::function<Result<transport::RegisteredRegion>(void*, size_t, transport::Access)>;
  using DeregisterFn = std::function<void(const transport::RegisteredRegion&)>;

  // Empty `reg` means "do not register": memory stays ordinary (keys are zero).
  RegisterFn reg;
  DeregisterFn dereg;

  [[nodiscard]] bool registers() const noexcept { return static_cast<bool>(reg); }
};

// Registers through `transport` (ibv_reg_mr on verbs). `transport` must outlive every
// pool or cache built from the returned registrar.
Registrar transport_registrar(transport::Transport& transport);

// Registers nothing on a device but hands out distinct non-zero keys, for the TCP transport
// (which checks keys itself) and for tests.
Registrar local_registrar();

// Calls `r.reg` and keeps `counters` (may be null) up to date. Control plane.
Result<transport::RegisteredRegion> register_counted(const Registrar& r, Counters* counters,
                                                     void* addr, size_t length,
                                                     transport::Access access);
void deregister_counted(const Registrar& r, Counters* counters,
                        const transport::RegisteredRegion& region) noexcept;

}  // namespace rdmarepl::memory
