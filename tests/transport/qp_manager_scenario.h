// The QP manager against a real transport (TCP in transport_tcp_tests, verbs on Soft-RoCE in
// verbs_tests): new connections from the factory, pooling of released ones, reuse instead
// of connecting, completion queues resized to the budget's share and shrunk in the pool.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/transport/transport.h"
#include "transport/qp_manager.h"

namespace rdmarepl::transport::testing {

// Connections of depth 128/128 to a listener of `t`, whose completion queues are created
// with `floor` entries (the size they never go below).
inline void qp_manager_scenario(Transport& t, uint32_t floor) {
  auto listener = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(listener);
  std::vector<std::unique_ptr<Connection>> accepted;
  ConnectionOptions small;
  small.send_queue_depth = 128;
  small.recv_queue_depth = 128;
  small.connect_timeout = std::chrono::seconds(60);
  QpManager::Factory factory = [&](uint32_t slot) -> Result<std::unique_ptr<Connection>> {
    ConnectionOptions o = small;
    o.app_data = std::to_string(slot);
    std::thread acceptor([&] {
      auto c = (*listener)->accept(small, std::chrono::seconds(60));
      if (c) accepted.push_back(std::move(*c));
    });
    auto c = t.connect((*listener)->local_endpoint(), o);
    acceptor.join();
    return c;
  };
  std::atomic<uint64_t> reused{0};
  std::atomic<uint64_t> resized{0};
  QpManagerOptions qo;
  qo.max_idle = 1;
  qo.cq_budget = 4 * floor;
  qo.reused_counter = &reused;
  qo.resize_counter = &resized;
  QpManager m(factory, qo);

  // N = 4: each gets the floor, so a new connection keeps its creation size.
  CHECK(m.set_active(4));
  CHECK(m.cq_entries() == floor);
  auto a = m.acquire(0);
  REQUIRE(a);
  auto b = m.acquire(1);
  REQUIRE(b);
  CHECK(m.made() == 2);
  CHECK(accepted.size() == 2);
  CHECK(accepted[0]->peer().app_data == "0");
  CHECK(accepted[1]->peer().app_data == "1");
  CHECK((*a)->completion_entries() == floor);
  CHECK(m.cq_resizes() == 0);

  // N = 2: twice the share; the caller fits its active connections.
  CHECK(m.set_active(2));
  CHECK_FALSE(m.set_active(2));  // unchanged
  CHECK(m.cq_entries() == 2 * floor);
  REQUIRE(m.fit(**a));
  REQUIRE(m.fit(**b));
  CHECK((*a)->completion_entries() == 2 * floor);
  CHECK(m.cq_resizes() == 2);
  REQUIRE(m.fit(**a));  // already that size: no resize
  CHECK(m.cq_resizes() == 2);

  // N = 1: b is released into the pool (shrunk to its floor), still connected.
  Connection* b_raw = b->get();
  CHECK(m.set_active(1));
  REQUIRE(m.fit(**a));
  CHECK((*a)->completion_entries() == 4 * floor);
  m.release(std::move(*b), 1);
  CHECK(m.idle() == 1);
  CHECK(b_raw->healthy());
  CHECK(b_raw->completion_entries() == floor);
  CHECK(m.cq_resizes() == 4);

  // N = 2 again: slot 1 takes the pooled connection back, no new connection.
  CHECK(m.set_active(2));
  bool reused_flag = false;
  auto again = m.acquire(1, &reused_flag);
  REQUIRE(again);
  CHECK(reused_flag);
  CHECK(again->get() == b_raw);
  CHECK(b_raw->completion_entries() == 2 * floor);
  CHECK(m.made() == 2);
  CHECK(m.reused() == 1);
  CHECK(accepted.size() == 2);

  // The pool keeps max_idle: a second release closes the connection.
  m.release(std::move(*again), 1);
  m.release(std::move(*a), 0);
  CHECK(m.idle() == 1);
  // A connection stays with its slot: slot 2 does not get slot 1's pooled one.
  auto other = m.acquire(2, &reused_flag);
  REQUIRE(other);
  CHECK_FALSE(reused_flag);
  CHECK(m.made() == 3);
  CHECK(m.idle() == 1);
  other->get()->close();
  // A pooled connection that failed is not handed out: a new one is made.
  m.for_each_idle([](uint32_t, Connection& c) { c.close(); });
  auto fresh = m.acquire(1);
  REQUIRE(fresh);
  CHECK((*fresh)->healthy());
  CHECK(m.made() == 4);
  CHECK(m.idle() == 0);
  CHECK(m.reused() == 1);
  CHECK(reused == m.reused());
  CHECK(resized == m.cq_resizes());
  // Far more shards than the budget: never below the floor.
  m.set_active(64);
  REQUIRE(m.fit(**fresh));
  CHECK((*fresh)->completion_entries() == floor);
}

}  // namespace rdmarepl::transport::testing
