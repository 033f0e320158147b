// Runs the transport conformance suite (tests/transport/conformance) against the verbs
// transport on the VM's rxe device. Built here, run through tests/rxe (label rxe).
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "transport/conformance/conformance.h"
#include "transport/verbs/verbs_transport.h"

namespace rdmarepl::transport::conformance {

std::unique_ptr<Transport> make_transport_under_test() {
  verbs::VerbsOptions o;
  if (const char* d = std::getenv("RDMAREPL_RXE_DEVICE")) o.device.name = d;
  auto t = verbs::VerbsTransport::create(o);
  if (!t) throw std::runtime_error("verbs transport: " + t.error().to_string());
  return std::move(*t);
}

Endpoint listen_endpoint_under_test() {
  return Endpoint{"127.0.0.1", 0};
}

}  // namespace rdmarepl::transport::conformance
