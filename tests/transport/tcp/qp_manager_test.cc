// The QP manager over TCP: pooling and reuse of connections, the completion ring resized.
#include <catch2/catch.hpp>

#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/qp_manager_scenario.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;

TEST_CASE("the QP manager pools TCP connections and resizes their completion rings", "[tcp]") {
  tcp::TcpTransport t;
  // Depth 128 on both queues: the completion ring holds 256 (send + receive).
  testing::qp_manager_scenario(t, 256);
}
