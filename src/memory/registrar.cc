#include "rdmarepl/memory/registrar.h"

#include <atomic>

#include "rdmarepl/memory/counters.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::memory {

Registrar transport_registrar(transport::Transport& transport) {
  Registrar r;
  r.reg = [&transport](void* addr, size_t length, transport::Access access) {
    return transport.register_raw(addr, length, access);
  };
  r.dereg = [&transport](const transport::RegisteredRegion& region) {
    transport.deregister_raw(region);
  };
  return r;
}

Registrar local_registrar() {
  Registrar r;
  r.reg = [](void* addr, size_t length,
             transport::Access access) -> Result<transport::RegisteredRegion> {
    // Keys only need to be distinct within the process; start away from 0 so that a zero
    // key always means "not registered".
    static std::atomic<uint32_t> next{0x1000};
    uint32_t k = next.fetch_add(2, std::memory_order_relaxed);
    transport::RegisteredRegion region;
    region.addr = addr;
    region.length = length;
    region.keys = {k, k + 1};
    region.access = access;
    return region;
  };
  r.dereg = [](const transport::RegisteredRegion&) {};
  return r;
}

Result<transport::RegisteredRegion> register_counted(const Registrar& r, Counters* counters,
                                                     void* addr, size_t length,
                                                     transport::Access access) {
  auto region = r.reg(addr, length, access);
  if (counters != nullptr) {
    if (!region.ok()) {
      counters->add(counters->registration_failures);
    } else {
      counters->add(counters->registrations);
      counters->add(counters->bytes_registered, length);
      counters->add(counters->bytes_registered_total, length);
    }
  }
  return region;
}

void deregister_counted(const Registrar& r, Counters* counters,
                        const transport::RegisteredRegion& region) noexcept {
  if (r.dereg) r.dereg(region);
  if (counters != nullptr) {
    counters->add(counters->deregistrations);
    counters->sub(counters->bytes_registered, region.length);
  }
}

}  // namespace rdmarepl::memory
