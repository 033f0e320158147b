// The transport conformance suite, written against the Transport interface only. Each
// transport links conformance_tests.cc with a factory file defining the two functions
// below (tests/transport/conformance/tcp_factory.cc; tests/transport/verbs/ for verbs).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::conformance {

// A fresh transport instance for one test case.
std::unique_ptr<Transport> make_transport_under_test();
// Where the suite's listeners bind; port 0 lets the system pick one.
Endpoint listen_endpoint_under_test();

// Two connected ends made by one transport in one process: `client` connected to a
// listener, `server` accepted by it.
struct ConnectedPair {
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};
ConnectedPair connect_pair(Transport& transport, const ConnectionOptions& client_options,
                           const ConnectionOptions& server_options);

// Completions reaped from both ends of a pair.
struct Reaped {
  std::vector<Completion> client;
  std::vector<Completion> server;
};
// Polls both ends (interleaved, in this thread) until `done(reaped)` holds or `timeout`
// passes. Returns whether `done` held.
bool pump(ConnectedPair& pair, Reaped& reaped, const std::function<bool(const Reaped&)>& done,
          std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace rdmarepl::transport::conformance
