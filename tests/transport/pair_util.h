// Test helpers: two connected ends of one transport in one process, and a poll loop.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::testing {

struct Pair {
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};

inline Pair make_pair(Transport& t, const ConnectionOptions& co, const ConnectionOptions& so) {
  Pair p;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  p.listener = std::move(*l);
  auto fut = std::async(std::launch::async,
                        [&] { return p.listener->accept(so, std::chrono::seconds(20)); });
  auto c = t.connect(p.listener->local_endpoint(), co);
  auto s = fut.get();
  if (!c.ok()) FAIL(c.error().to_string());
  if (!s.ok()) FAIL(s.error().to_string());
  p.client = std::move(*c);
  p.server = std::move(*s);
  return p;
}

// Polls both ends until done() or the timeout; returns done().
inline bool pump(Pair& p, std::vector<Completion>& client, std::vector<Completion>& server,
                 const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  Completion buf[64];
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    size_t n = p.client->poll(buf);
    client.insert(client.end(), buf, buf + n);
    size_t m = p.server->poll(buf);
    server.insert(server.end(), buf, buf + m);
    if (n + m == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

}  // namespace rdmarepl::transport::testing
