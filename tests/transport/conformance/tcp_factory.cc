// Runs the conformance suite against the TCP transport over loopback.
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/conformance/conformance.h"

namespace rdmarepl::transport::conformance {

std::unique_ptr<Transport> make_transport_under_test() {
  return std::make_unique<tcp::TcpTransport>();
}

Endpoint listen_endpoint_under_test() {
  return Endpoint{"127.0.0.1", 0};
}

}  // namespace rdmarepl::transport::conformance
