// Conformance of two-sided messages (Send into posted receive buffers), RDMA Reads and
// waiting on several connections at once (wait_any).
// Only the Transport interface is used here; see conformance.h.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/conformance/conformance.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::conformance;

namespace {

constexpr size_t kBytes = 1 << 20;

// A registered buffer of `n` bytes filled with a pattern that depends on `salt`.
struct Buf {
  std::vector<uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
  Buf(Transport& t, size_t n, Access access, uint8_t salt) : bytes(n) {
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 13 + salt);
    auto r = t.register_memory(bytes.data(), bytes.size(), access);
    REQUIRE(r.ok());
    mr = std::move(*r);
  }
  uint32_t lkey() const { return mr->region().keys.lkey; }
  uint8_t* at(size_t off) { return bytes.data() + off; }
};

// Client and server each with a send buffer and a receive buffer; the server also exposes
// a region for remote reads (the client learns it in the handshake) and one for writes only.
struct MsgEnv {
  std::unique_ptr<Transport> transport = make_transport_under_test();
  Buf client_tx{*transport, kBytes, Access::local_write, 1};
  Buf client_rx{*transport, kBytes, Access::local_write, 2};
  Buf server_tx{*transport, kBytes, Access::local_write, 3};
  Buf server_rx{*transport, kBytes, Access::local_write, 4};
  Buf readable{*transport, kBytes, Access::local_write | Access::remote_read, 5};
  Buf write_only{*transport, 4096, Access::local_write | Access::remote_write, 6};
  ConnectedPair pair;

  MsgEnv() {
    ConnectionOptions co, so;
    co.node_id = "client";
    so.node_id = "server";
    so.regions = {readable.mr->remote(), write_only.mr->remote()};
    pair = connect_pair(*transport, co, so);
  }
  Connection& client() { return *pair.client; }
  Connection& server() { return *pair.server; }
  RemoteRegion readable_region() const { return pair.client->peer().regions.at(0); }
  RemoteRegion write_only_region() const { return pair.client->peer().regions.at(1); }
  ReadRequest read(uint64_t wr_id, size_t local_off, uint32_t len, uint64_t remote_off) {
    return ReadRequest{wr_id,
                       client_rx.at(local_off),
                       len,
                       client_rx.lkey(),
                       readable_region().addr + remote_off,
                       readable_region().rkey};
  }
};

const Completion* find(const std::vector<Completion>& cs, uint64_t wr_id, WcOpcode op) {
  for (const auto& c : cs)
    if (c.wr_id == wr_id && c.opcode == op) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("conformance: sends land in posted receive buffers, in order, both ways",
          "[conformance][messages]") {
  MsgEnv env;
  constexpr int kMsgs = 64;
  constexpr uint32_t kSlot = 8192;
  std::vector<RecvBuffer> bufs;
  for (int i = 0; i < kMsgs; ++i)
    bufs.push_back(RecvBuffer{static_cast<uint64_t>(100 + i), env.server_rx.at(size_t(i) * kSlot),
                              kSlot, env.server_rx.lkey()});
  REQUIRE(env.server().post_recv_buffers(bufs) == PostStatus::ok);
  std::vector<SendRequest> sends;
  for (int i = 0; i < kMsgs; ++i) {
    const auto len = static_cast<uint32_t>((i * 997) % kSlot);  // 0 included
    sends.push_back(SendRequest{static_cast<uint64_t>(i), env.client_tx.at(size_t(i) * 7), len,
                                env.client_tx.lkey(), i % 4 == 3});
  }
  REQUIRE(env.client().post_sends(sends) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.server.size() == kMsgs && find(x.client, kMsgs - 1, WcOpcode::send) != nullptr;
  }));
  for (int i = 0; i < kMsgs; ++i) {
    INFO("message " << i);
    const Completion& c = r.server[size_t(i)];
    CHECK(c.status == WcStatus::success);
    CHECK(c.opcode == WcOpcode::recv);
    CHECK(c.wr_id == 100u + uint64_t(i));
    CHECK(c.byte_len == sends[size_t(i)].length);
    CHECK(std::memcmp(env.server_rx.at(size_t(i) * kSlot), sends[size_t(i)].local_addr,
                      sends[size_t(i)].length) == 0);
  }
  CHECK(r.client.size() == kMsgs / 4);  // only the signaled ones
  for (const auto& c : r.client)
    CHECK((c.opcode == WcOpcode::send && c.status == WcStatus::success));

  // A reply the other way: request/response over one connection.
  RecvBuffer reply_buf{7, env.client_rx.at(0), 512, env.client_rx.lkey()};
  REQUIRE(env.client().post_recv_buffers({&reply_buf, 1}) == PostStatus::ok);
  SendRequest reply{77, env.server_tx.at(3), 300, env.server_tx.lkey(), true};
  REQUIRE(env.server().post_sends({&reply, 1}) == PostStatus::ok);
  Reaped back;
  REQUIRE(pump(env.pair, back, [&](const Reaped& x) {
    return find(x.client, 7, WcOpcode::recv) && find(x.server, 77, WcOpcode::send);
  }));
  CHECK(find(back.client, 7, WcOpcode::recv)->byte_len == 300);
  CHECK(std::memcmp(env.client_rx.at(0), env.server_tx.at(3), 300) == 0);
}

TEST_CASE("conformance: sends and writes with immediate share the receive queue in order",
          "[conformance][messages]") {
  MsgEnv env;
  // Zero-length receive, buffer, zero-length receive: write, send, write.
  REQUIRE(env.server().post_recvs(1, 10) == PostStatus::ok);
  RecvBuffer b{11, env.server_rx.at(0), 256, env.server_rx.lkey()};
  REQUIRE(env.server().post_recv_buffers({&b, 1}) == PostStatus::ok);
  REQUIRE(env.server().post_recvs(1, 12) == PostStatus::ok);
  // The writes need a writable region: reuse the write-only one as the target.
  WriteRequest w{};
  w.wr_id = 1;
  w.local_addr = env.client_tx.at(0);
  w.length = 16;
  w.lkey = env.client_tx.lkey();
  w.remote_addr = env.write_only_region().addr;
  w.rkey = env.write_only_region().rkey;
  w.imm = 42;
  SendRequest s{2, env.client_tx.at(100), 200, env.client_tx.lkey(), true};
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  REQUIRE(env.client().post_sends({&s, 1}) == PostStatus::ok);
  w.wr_id = 3;
  w.imm = 43;
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r,
               [](const Reaped& x) { return x.server.size() == 3 && x.client.size() == 3; }));
  CHECK((r.server[0].wr_id == 10 && r.server[0].opcode == WcOpcode::recv_rdma_with_imm &&
         r.server[0].imm == 42));
  CHECK((r.server[1].wr_id == 11 && r.server[1].opcode == WcOpcode::recv &&
         r.server[1].byte_len == 200));
  CHECK((r.server[2].wr_id == 12 && r.server[2].imm == 43));
  CHECK(std::memcmp(env.server_rx.at(0), env.client_tx.at(100), 200) == 0);
  CHECK((r.client[0].opcode == WcOpcode::rdma_write && r.client[1].opcode == WcOpcode::send &&
         r.client[2].opcode == WcOpcode::rdma_write));
}

TEST_CASE("conformance: a send longer than the receive buffer is a length error",
          "[conformance][messages]") {
  MsgEnv env;
  std::memset(env.server_rx.at(0), 0xee, 64);
  RecvBuffer b{5, env.server_rx.at(0), 64, env.server_rx.lkey()};
  REQUIRE(env.server().post_recv_buffers({&b, 1}) == PostStatus::ok);
  SendRequest s{9, env.client_tx.at(0), 65, env.client_tx.lkey(), true};
  REQUIRE(env.client().post_sends({&s, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(
      pump(env.pair, r, [](const Reaped& x) { return !x.server.empty() && !x.client.empty(); }));
  CHECK(r.server[0].wr_id == 5);
  // IBV_WC_LOC_LEN_ERR on hardware and TCP; Soft-RoCE (rxe) reports IBV_WC_LOC_QP_OP_ERR.
  CHECK((r.server[0].status == WcStatus::local_length_error ||
         r.server[0].status == WcStatus::local_qp_error));
  CHECK(r.client[0].wr_id == 9);
  CHECK(r.client[0].status != WcStatus::success);
  REQUIRE(pump(env.pair, r,
               [&](const Reaped&) { return !env.server().healthy() && !env.client().healthy(); }));
}

TEST_CASE("conformance: RDMA reads place the peer's bytes and complete in order",
          "[conformance][messages]") {
  MsgEnv env;
  // More reads than kMaxReadsInFlight, of growing size, interleaved with sends: every
  // completion in posting order.
  constexpr int kReads = 3 * kMaxReadsInFlight + 1;
  REQUIRE(env.server().post_recv_buffers(std::vector<RecvBuffer>(
              kReads, RecvBuffer{0, env.server_rx.at(0), 64, env.server_rx.lkey()})) ==
          PostStatus::ok);
  std::vector<uint32_t> lens;
  size_t off = 0;
  for (int i = 0; i < kReads; ++i) {
    const auto len = static_cast<uint32_t>(i == kReads - 1 ? 512 * 1024 : (i * 1237) % 9000);
    auto rd = env.read(uint64_t(2 * i), off, len, off + 5);
    REQUIRE(env.client().post_reads({&rd, 1}) == PostStatus::ok);
    SendRequest s{uint64_t(2 * i + 1), env.client_tx.at(0), 8, env.client_tx.lkey(), true};
    REQUIRE(env.client().post_sends({&s, 1}) == PostStatus::ok);
    lens.push_back(len);
    off += len;
  }
  REQUIRE(off + 5 <= kBytes);
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) { return x.client.size() == 2 * kReads; }));
  for (int i = 0; i < 2 * kReads; ++i) {
    INFO("completion " << i);
    const Completion& c = r.client[size_t(i)];
    CHECK(c.wr_id == uint64_t(i));
    CHECK(c.status == WcStatus::success);
    CHECK(c.opcode == (i % 2 == 0 ? WcOpcode::rdma_read : WcOpcode::send));
    if (i % 2 == 0) CHECK(c.byte_len == lens[size_t(i / 2)]);
  }
  CHECK(std::memcmp(env.client_rx.at(0), env.readable.at(5), off) == 0);
  CHECK(env.client().healthy());
  CHECK(env.server().healthy());
}

TEST_CASE("conformance: a read outside a remotely readable region is a remote access error",
          "[conformance][messages]") {
  auto expect_refused = [](MsgEnv& env, ReadRequest rd) {
    std::memset(env.client_rx.at(0), 0x5a, 4096);
    REQUIRE(env.client().post_reads({&rd, 1}) == PostStatus::ok);
    Reaped r;
    REQUIRE(pump(env.pair, r, [](const Reaped& x) { return !x.client.empty(); }));
    CHECK(r.client[0].wr_id == rd.wr_id);
    CHECK(r.client[0].opcode == WcOpcode::rdma_read);
    CHECK(r.client[0].status == WcStatus::remote_access_error);
    CHECK_FALSE(env.client().healthy());
    for (size_t i = 0; i < 4096; ++i)
      if (env.client_rx.bytes[i] != 0x5a) FAIL("local buffer changed at " << i);
  };
  SECTION("past the end of the region") {
    MsgEnv env;
    expect_refused(env, env.read(1, 0, 4096, kBytes - 100));
  }
  SECTION("a region registered for remote write only") {
    MsgEnv env;
    ReadRequest rd = env.read(2, 0, 64, 0);
    rd.remote_addr = env.write_only_region().addr;
    rd.rkey = env.write_only_region().rkey;
    expect_refused(env, rd);
  }
  SECTION("an unknown rkey") {
    MsgEnv env;
    ReadRequest rd = env.read(3, 0, 64, 0);
    rd.rkey ^= 0x5a5a5a5au;
    expect_refused(env, rd);
  }
}

TEST_CASE("conformance: wait_any sleeps until any of several connections has a completion",
          "[conformance][messages]") {
  auto transport = make_transport_under_test();
  Buf tx{*transport, 4096, Access::local_write, 1};
  Buf rx{*transport, 8192, Access::local_write, 2};
  ConnectionOptions co, so;
  co.node_id = "client";
  so.node_id = "server";
  ConnectedPair a = connect_pair(*transport, co, so);
  ConnectedPair b = connect_pair(*transport, co, so);
  RecvBuffer ra{1, rx.at(0), 4096, rx.lkey()};
  RecvBuffer rb{2, rx.at(4096), 4096, rx.lkey()};
  REQUIRE(a.server->post_recv_buffers({&ra, 1}) == PostStatus::ok);
  REQUIRE(b.server->post_recv_buffers({&rb, 1}) == PostStatus::ok);
  Connection* servers[] = {a.server.get(), b.server.get()};

  // Nothing was sent: it returns false after the timeout, and nothing is there to poll.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(wait_any(servers, std::chrono::milliseconds(60)));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(50));
  Completion c[4];
  CHECK(a.server->poll(c) == 0);
  CHECK(b.server->poll(c) == 0);

  // The second pair's client sends: the wait returns, and that server has the message.
  PostStatus posted = PostStatus::ok;  // read after join (Catch2 asserts stay on this thread)
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    SendRequest s{9, tx.at(0), 100, tx.lkey(), true};
    posted = b.client->post_sends({&s, 1});
    Completion done[2];
    for (int i = 0; i < 2000 && b.client->poll(done) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  size_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got == 0 && std::chrono::steady_clock::now() < deadline) {
    (void)wait_any(servers, std::chrono::milliseconds(1000));
    got = b.server->poll(c);
    CHECK(a.server->poll({c + 1, 3}) == 0);
  }
  sender.join();
  REQUIRE(posted == PostStatus::ok);
  REQUIRE(got == 1);
  CHECK(c[0].wr_id == 2);
  CHECK(c[0].opcode == WcOpcode::recv);
  CHECK(c[0].byte_len == 100);
}
