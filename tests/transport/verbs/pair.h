// Test helpers: a verbs transport on the VM's rxe device and a connected pair of
// connections over it (both ends in this process, looped back through the driver).
#pragma once

#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "transport/verbs/verbs_transport.h"

namespace rdmarepl::transport::verbs::test {

// The device the harness created (run-in-vm.sh exports RDMAREPL_RXE_DEVICE=rxe0).
inline VerbsOptions vm_options() {
  VerbsOptions o;
  if (const char* d = std::getenv("RDMAREPL_RXE_DEVICE")) o.device.name = d;
  return o;
}

inline std::unique_ptr<VerbsTransport> make_transport(const VerbsOptions& o = vm_options()) {
  auto t = VerbsTransport::create(o);
  if (!t) FAIL("VerbsTransport::create: " << t.error().to_string());
  return std::move(*t);
}

struct Pair {
  std::unique_ptr<Connection> client;  // initiator
  std::unique_ptr<Connection> server;  // responder
  VerbsConnection& c() { return static_cast<VerbsConnection&>(*client); }
  VerbsConnection& s() { return static_cast<VerbsConnection&>(*server); }
};

// Connects `client_t` to a listener of `server_t`. Either side's failure is returned as the
// error of the pair.
inline Result<Pair> try_connect(Transport& server_t, Transport& client_t,
                                ConnectionOptions server_opts = {},
                                ConnectionOptions client_opts = {}) {
  auto listener = server_t.listen(Endpoint{"127.0.0.1", 0});
  if (!listener) return listener.error();
  // Generous: a TCG guest on a busy host can take seconds to fault in a binary's pages.
  server_opts.connect_timeout = client_opts.connect_timeout = std::chrono::seconds(60);
  if (server_opts.node_id.empty()) server_opts.node_id = "server";
  if (client_opts.node_id.empty()) client_opts.node_id = "client";
  auto accepted = std::async(std::launch::async, [&] {
    return (*listener)->accept(server_opts, std::chrono::seconds(60));
  });
  auto c = client_t.connect((*listener)->local_endpoint(), client_opts);
  auto s = accepted.get();
  if (!c) return c.error();
  if (!s) return s.error();
  return Pair{std::move(*c), std::move(*s)};
}

inline Pair connect(Transport& server_t, Transport& client_t, ConnectionOptions server_opts = {},
                    ConnectionOptions client_opts = {}) {
  auto p = try_connect(server_t, client_t, std::move(server_opts), std::move(client_opts));
  if (!p) FAIL("connect: " << p.error().to_string());
  return std::move(*p);
}

// Polls until `want` completions arrived or ~10 s passed (the bound only stops a hung test;
// nothing is timed).
inline std::vector<Completion> reap(Connection& conn, size_t want) {
  std::vector<Completion> got;
  Completion buf[64];
  for (int i = 0; i < 1000 && got.size() < want; ++i) {
    size_t n = conn.poll(buf);
    got.insert(got.end(), buf, buf + n);
    if (got.size() < want && n == 0) (void)conn.wait(std::chrono::milliseconds(10));
  }
  return got;
}

}  // namespace rdmarepl::transport::verbs::test
