// The TCP transport's economy of system calls on request/response connections: when an
// acknowledgement of Sends is deferred and when it must go out (docs/transport.md,
// "Acknowledgements"), and the reading of a socket poll(2) found empty.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/pair_util.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::testing;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kSlot = 1024;

bool has(const std::vector<Completion>& cs, uint64_t wr_id, WcOpcode op) {
  for (const auto& c : cs)
    if (c.wr_id == wr_id && c.opcode == op && c.status == WcStatus::success) return true;
  return false;
}

// A client and a server that have each sent one message already (request/response), with
// receive buffers posted on both sides.
struct ReqResp {
  tcp::TcpTransport t;
  std::vector<uint8_t> mem = std::vector<uint8_t>(16 * kSlot, 0x5a);
  std::unique_ptr<MemoryRegion> mr;
  std::vector<uint8_t> target = std::vector<uint8_t>(4096, 0);
  std::unique_ptr<MemoryRegion> target_mr;
  Pair pair;
  std::vector<Completion> client, server;

  ReqResp() {
    mr = std::move(t.register_memory(mem.data(), mem.size(), Access::local_write).value());
    target_mr = std::move(
        t.register_memory(target.data(), target.size(), Access::local_write | Access::remote_write)
            .value());
    ConnectionOptions co, so;
    co.node_id = "client";
    so.node_id = "server";
    so.regions = {target_mr->remote()};
    pair = make_pair(t, co, so);
    for (uint64_t i = 0; i < 4; ++i) {
      RecvBuffer c{100 + i, at(i), kSlot, lkey()};
      RecvBuffer s{200 + i, at(8 + i), kSlot, lkey()};
      REQUIRE(pair.client->post_recv_buffers({&c, 1}) == PostStatus::ok);
      REQUIRE(pair.server->post_recv_buffers({&s, 1}) == PostStatus::ok);
    }
    // Each side sends once: from now on both post Sends.
    send(*pair.server, 1);
    send(*pair.client, 2);
    REQUIRE(pump(pair, client, server, [&] {
      return has(client, 100, WcOpcode::recv) && has(server, 200, WcOpcode::recv) &&
             has(client, 2, WcOpcode::send) && has(server, 1, WcOpcode::send);
    }));
    client.clear();
    server.clear();
  }
  uint8_t* at(uint64_t slot) { return mem.data() + slot * kSlot; }
  uint32_t lkey() const { return mr->region().keys.lkey; }
  void send(Connection& c, uint64_t wr_id) {
    SendRequest s{wr_id, at(15), 64, lkey(), true};
    REQUIRE(c.post_sends({&s, 1}) == PostStatus::ok);
  }
  // Polls only `c` until it delivered a completion with `wr_id` (5 s at most).
  static bool poll_for(Connection& c, std::vector<Completion>& into, uint64_t wr_id, WcOpcode op) {
    Completion wc[8];
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline;) {
      const size_t n = c.poll(wc);
      into.insert(into.end(), wc, wc + n);
      if (has(into, wr_id, op)) return true;
      std::this_thread::sleep_for(50us);
    }
    return false;
  }
  // Polls only the client for `how_long`; whether its send `wr_id` completed.
  bool client_send_completes_within(uint64_t wr_id, std::chrono::milliseconds how_long) {
    Completion wc[8];
    for (auto end = std::chrono::steady_clock::now() + how_long;
         std::chrono::steady_clock::now() < end;) {
      const size_t n = pair.client->poll(wc);
      client.insert(client.end(), wc, wc + n);
      if (has(client, wr_id, WcOpcode::send)) return true;
      std::this_thread::sleep_for(200us);
    }
    return false;
  }
};

}  // namespace

TEST_CASE("tcp: the ack of a request waits for the response, in front of it", "[transport][tcp]") {
  ReqResp e;
  e.send(*e.pair.client, 10);
  REQUIRE(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv));
  // The server placed the request but has not answered: its ack waits.
  CHECK_FALSE(e.client_send_completes_within(10, 50ms));
  // The response carries it: the request's completion comes first, in the same poll.
  e.send(*e.pair.server, 11);
  REQUIRE(ReqResp::poll_for(*e.pair.client, e.client, 101, WcOpcode::recv));
  REQUIRE(e.client.size() == 2);
  CHECK((e.client[0].wr_id == 10 && e.client[0].opcode == WcOpcode::send));
  CHECK(e.client[1].byte_len == 64);
}

TEST_CASE("tcp: a deferred ack goes out at the responder's next call", "[transport][tcp]") {
  ReqResp e;
  SECTION("poll") {
    e.send(*e.pair.client, 10);
    REQUIRE(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv));
    Completion wc[4];
    CHECK(e.pair.server->poll(wc) == 0);
    CHECK(e.client_send_completes_within(10, 5000ms));
  }
  SECTION("wait_any, before it blocks") {
    e.send(*e.pair.client, 10);
    REQUIRE(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv));
    Connection* servers[] = {e.pair.server.get()};
    (void)wait_any(servers, 0ms);
    CHECK(e.client_send_completes_within(10, 5000ms));
  }
  SECTION("close") {
    e.send(*e.pair.client, 10);
    REQUIRE(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv));
    e.pair.server->close();
    CHECK(e.client_send_completes_within(10, 5000ms));
  }
}

TEST_CASE("tcp: writes, and Sends to a side that never sends, are acknowledged at once",
          "[transport][tcp]") {
  SECTION("a write on a request/response connection") {
    ReqResp e;
    WriteRequest w;
    w.wr_id = 12;
    w.local_addr = e.at(15);
    w.length = 128;
    w.lkey = e.lkey();
    w.remote_addr = e.target_mr->remote().addr;
    w.rkey = e.target_mr->remote().rkey;
    w.signaled = true;
    REQUIRE(e.pair.client->post_writes({&w, 1}) == PostStatus::ok);
    // It consumes the oldest receive posted, a buffer.
    REQUIRE(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv_rdma_with_imm));
    // The server is not polled again: the ack left with the poll that placed the write.
    Completion wc[4];
    bool done = false;
    for (auto end = std::chrono::steady_clock::now() + 5s;
         !done && std::chrono::steady_clock::now() < end;) {
      const size_t n = e.pair.client->poll(wc);
      for (size_t i = 0; i < n; ++i)
        done = done || (wc[i].wr_id == 12 && wc[i].opcode == WcOpcode::rdma_write);
      std::this_thread::sleep_for(200us);
    }
    CHECK(done);
  }
  SECTION("a send to a server that never posted one") {
    tcp::TcpTransport t;
    std::vector<uint8_t> mem(2 * kSlot);
    auto mr = std::move(t.register_memory(mem.data(), mem.size(), Access::local_write).value());
    ConnectionOptions co, so;
    Pair p = make_pair(t, co, so);
    RecvBuffer b{1, mem.data(), kSlot, mr->region().keys.lkey};
    REQUIRE(p.server->post_recv_buffers({&b, 1}) == PostStatus::ok);
    SendRequest s{2, mem.data() + kSlot, 64, mr->region().keys.lkey, true};
    REQUIRE(p.client->post_sends({&s, 1}) == PostStatus::ok);
    std::vector<Completion> client, server;
    REQUIRE(ReqResp::poll_for(*p.server, server, 1, WcOpcode::recv));
    // The server is not polled again: the ack left with the poll that placed the message.
    CHECK(ReqResp::poll_for(*p.client, client, 2, WcOpcode::send));
  }
}

TEST_CASE("tcp: a socket poll(2) found empty is not read by the next poll(), then is",
          "[transport][tcp]") {
  ReqResp e;
  Connection* servers[] = {e.pair.server.get()};
  CHECK_FALSE(wait_any(servers, 0ms));  // nothing there
  e.send(*e.pair.client, 10);
  std::this_thread::sleep_for(20ms);  // the request is in the server's socket now
  Completion wc[4];
  CHECK(e.pair.server->poll(wc) == 0);  // the hint said empty: no read
  CHECK(ReqResp::poll_for(*e.pair.server, e.server, 201, WcOpcode::recv));
}
