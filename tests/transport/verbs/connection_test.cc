// The verbs transport on Soft-RoCE: write-with-immediate, chaining, selective signaling,
// inline data, SRQ, automatic receives, split registrations and tear-down. Runs in the VM
// (tests/rxe): the host has no RDMA device.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "pair.h"
#include "transport/bootstrap/socket.h"
#include "transport/verbs/handles.h"

namespace rdmarepl::transport::verbs::test {
namespace {

struct Ring {
  std::vector<uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
  Ring(Transport& t, size_t n, Access a = Access::local_write | Access::remote_write)
      : bytes(n, 0) {
    auto r = t.register_memory(bytes.data(), n, a);
    if (!r) FAIL(r.error().to_string());
    mr = std::move(*r);
  }
};

ConnectionOptions with_regions(std::vector<RemoteRegion> regions) {
  ConnectionOptions o;
  o.regions = std::move(regions);
  return o;
}

}  // namespace

TEST_CASE("write-with-immediate places the bytes and delivers the immediate", "[verbs]") {
  auto t = make_transport();
  Ring ring(*t, 4096);
  Ring src(*t, 4096, Access::local_write);
  auto p = connect(*t, *t, with_regions({ring.mr->remote()}));
  REQUIRE(p.client->peer().regions.size() == 1);
  REQUIRE(p.client->peer().node_id == "server");
  REQUIRE(p.server->peer().node_id == "client");
  const RemoteRegion dst = p.client->peer().regions[0];

  REQUIRE(p.server->post_recvs(4, 100) == PostStatus::ok);
  std::iota(src.bytes.begin(), src.bytes.end(), uint8_t{0});
  WriteRequest w{7,        src.bytes.data(), 1000, src.mr->region().keys.lkey, dst.addr + 16,
                 dst.rkey, 0xdeadbeef,       true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);

  auto sent = reap(*p.client, 1);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].status == WcStatus::success);
  CHECK(sent[0].opcode == WcOpcode::rdma_write);
  CHECK(sent[0].wr_id == 7);
  auto got = reap(*p.server, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == WcStatus::success);
  CHECK(got[0].opcode == WcOpcode::recv_rdma_with_imm);
  CHECK(got[0].imm == 0xdeadbeef);  // host order on both ends
  CHECK(got[0].byte_len == 1000);
  CHECK(got[0].wr_id == 100);
  CHECK(std::memcmp(ring.bytes.data() + 16, src.bytes.data(), 1000) == 0);
  CHECK(ring.bytes[15] == 0);
  CHECK(ring.bytes[1016] == 0);
  CHECK(p.client->healthy());
  CHECK(p.server->healthy());
  CHECK(p.server->error().message().empty());
}

TEST_CASE("a chain of 64 writes with only the last signaled yields one completion", "[verbs]") {
  auto t = make_transport();
  Ring ring(*t, 64 * 64);
  Ring src(*t, 64 * 64, Access::local_write);
  auto p = connect(*t, *t, with_regions({ring.mr->remote()}));
  const RemoteRegion dst = p.client->peer().regions[0];
  REQUIRE(p.server->post_recvs(64) == PostStatus::ok);
  std::vector<WriteRequest> ws(64);
  for (uint32_t i = 0; i < 64; ++i) {
    std::memset(src.bytes.data() + i * 64, static_cast<int>(i + 1), 64);
    ws[i] = WriteRequest{i,
                         src.bytes.data() + i * 64,
                         64,
                         src.mr->region().keys.lkey,
                         dst.addr + i * 64,
                         dst.rkey,
                         1000 + i,
                         i == 63};
  }
  REQUIRE(p.client->post_writes(ws) == PostStatus::ok);
  auto got = reap(*p.server, 64);
  REQUIRE(got.size() == 64);
  for (uint32_t i = 0; i < 64; ++i) CHECK(got[i].imm == 1000 + i);  // in order
  auto sent = reap(*p.client, 1);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].wr_id == 63);
  Completion extra[4];
  CHECK(p.client->poll(extra) == 0);
  CHECK(std::memcmp(ring.bytes.data(), src.bytes.data(), ring.bytes.size()) == 0);
  CHECK(static_cast<VerbsConnection&>(*p.client).outstanding_sends() == 0);
}

TEST_CASE("small writes go inline, zero-length writes deliver the immediate alone", "[verbs]") {
  auto t = make_transport();
  Ring ring(*t, 4096);
  auto p = connect(*t, *t, with_regions({ring.mr->remote()}));
  INFO("granted max_inline_data " << p.c().max_inline_data());
  REQUIRE(p.c().max_inline_data() > 0);
  const RemoteRegion dst = p.client->peer().regions[0];
  REQUIRE(p.server->post_recvs(2) == PostStatus::ok);
  // Not registered: legal only because the payload is copied into the request (inline).
  char stack_bytes[16] = "inline payload";
  WriteRequest ws[2] = {
      {1, stack_bytes, sizeof stack_bytes, 0, dst.addr, dst.rkey, 1, true},
      {2, nullptr, 0, 0, dst.addr + 100, dst.rkey, 2, true},
  };
  REQUIRE(p.client->post_writes(ws) == PostStatus::ok);
  auto got = reap(*p.server, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].byte_len == sizeof stack_bytes);
  CHECK(got[1].byte_len == 0);
  CHECK(got[1].imm == 2);
  CHECK(std::memcmp(ring.bytes.data(), stack_bytes, sizeof stack_bytes) == 0);
  CHECK(reap(*p.client, 2).size() == 2);
}

TEST_CASE("selective signaling keeps the send queue draining", "[verbs]") {
  auto t = make_transport();
  Ring ring(*t, 4096);
  ConnectionOptions small;
  small.send_queue_depth = 128;  // two unsignaled batches of 64
  small.recv_queue_depth = 1024;
  ConnectionOptions server = small;
  server.regions = {ring.mr->remote()};
  auto p = connect(*t, *t, server, small);
  const RemoteRegion dst = p.client->peer().regions[0];
  REQUIRE(p.server->post_recvs(1000) == PostStatus::ok);
  // 1000 unsignaled writes through a 128-deep queue: only the forced signaled requests free
  // slots, and none of them is reported to the caller.
  uint32_t posted = 0;
  Completion buf[64];
  size_t reported = 0;
  for (int spins = 0; posted < 1000 && spins < 100000; ++spins) {
    WriteRequest w{posted, nullptr, 0, 0, dst.addr, dst.rkey, posted, false};
    auto st = p.client->post_writes({&w, 1});
    if (st == PostStatus::ok) {
      ++posted;
    } else {
      REQUIRE(st == PostStatus::queue_full);
      CHECK(p.c().outstanding_sends() == 128);
      reported += p.client->poll(buf);
    }
  }
  REQUIRE(posted == 1000);
  auto got = reap(*p.server, 1000);
  REQUIRE(got.size() == 1000);
  CHECK(got.back().imm == 999);
  CHECK(reported == 0);
}

TEST_CASE("bad requests and full queues are refused without posting", "[verbs]") {
  auto t = make_transport();
  ConnectionOptions o;
  o.send_queue_depth = 128;
  o.recv_queue_depth = 8;
  auto p = connect(*t, *t, o, o);
  WriteRequest bad{1, nullptr, 10, 0, 0, 0, 0, true};
  CHECK(p.client->post_writes({&bad, 1}) == PostStatus::invalid);
  std::vector<WriteRequest> many(129);
  CHECK(p.client->post_writes(many) == PostStatus::queue_full);
  CHECK(p.c().outstanding_sends() == 0);
  CHECK(p.server->post_recvs(8) == PostStatus::ok);
  CHECK(p.server->post_recvs(1) == PostStatus::queue_full);
  CHECK(p.s().posted_recvs() == 8);
}

TEST_CASE("a shallow send queue gets a smaller unsignaled batch", "[verbs]") {
  auto t = make_transport();
  ConnectionOptions o;
  o.send_queue_depth = 100;  // < 2 x 64
  auto p = connect(*t, *t, o, o);
  CHECK(p.c().unsignaled_batch() == 50);
  CHECK(p.c().send_queue_depth() >= 2 * p.c().unsignaled_batch());
  o.send_queue_depth = 1;
  auto one = connect(*t, *t, o, o);
  CHECK(one.c().unsignaled_batch() == 1);  // every request signaled
  ConnectionOptions zero;
  zero.send_queue_depth = 0;
  auto bad = try_connect(*t, *t, zero, zero);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::invalid_argument));
}

TEST_CASE("a shared receive queue serves two connections", "[verbs]") {
  auto opts = vm_options();
  opts.use_srq = true;
  opts.srq_depth = 256;
  auto server_t = make_transport(opts);
  auto client_t = make_transport();
  Ring ring(*server_t, 4096);
  auto a = connect(*server_t, *client_t, with_regions({ring.mr->remote()}));
  auto b = connect(*server_t, *client_t, with_regions({ring.mr->remote()}));
  // Receives posted through one connection land in the SRQ and serve both.
  REQUIRE(a.server->post_recvs(4, 500) == PostStatus::ok);
  const RemoteRegion dst = a.client->peer().regions[0];
  WriteRequest w1{1, nullptr, 0, 0, dst.addr, dst.rkey, 11, true};
  WriteRequest w2{2, nullptr, 0, 0, dst.addr, dst.rkey, 22, true};
  REQUIRE(a.client->post_writes({&w1, 1}) == PostStatus::ok);
  REQUIRE(b.client->post_writes({&w2, 1}) == PostStatus::ok);
  auto ga = reap(*a.server, 1);
  auto gb = reap(*b.server, 1);
  REQUIRE(ga.size() == 1);
  REQUIRE(gb.size() == 1);
  CHECK(ga[0].imm == 11);
  CHECK(gb[0].imm == 22);
  CHECK(ga[0].wr_id >= 500);
  CHECK(gb[0].wr_id >= 500);
}

TEST_CASE("automatic receives are pre-posted and replenished in batches", "[verbs]") {
  auto opts = vm_options();
  opts.auto_recv = true;
  opts.recv_replenish_batch = 8;
  auto t = make_transport(opts);
  ConnectionOptions o;
  o.recv_queue_depth = 16;
  auto p = connect(*t, *t, o, o);
  CHECK(p.s().posted_recvs() == 16);
  const RemoteRegion none{};
  // Five times the receive queue, with no post_recvs from the caller.
  size_t received = 0;
  for (uint32_t round = 0; round < 10; ++round) {
    std::vector<WriteRequest> ws(8);
    for (uint32_t i = 0; i < 8; ++i)
      ws[i] = WriteRequest{i, nullptr, 0, 0, none.addr, none.rkey, round * 8 + i, i == 7};
    REQUIRE(p.client->post_writes(ws) == PostStatus::ok);
    auto got = reap(*p.server, 8);
    REQUIRE(got.size() == 8);
    for (uint32_t i = 0; i < 8; ++i) CHECK(got[i].imm == round * 8 + i);
    received += got.size();
    REQUIRE(reap(*p.client, 1).size() == 1);
  }
  CHECK(received == 80);
  CHECK(p.server->healthy());
}

TEST_CASE("registrations above the MR size limit are split", "[verbs]") {
  auto opts = vm_options();
  opts.max_mr_bytes = 64 * 1024;
  auto t = make_transport(opts);
  std::vector<uint8_t> big(200 * 1024, 0);
  auto mr = t->register_memory(big.data(), big.size(), Access::local_write | Access::remote_write);
  REQUIRE(mr);
  auto& vmr = static_cast<VerbsMemoryRegion&>(**mr);
  REQUIRE(vmr.segments().size() == 4);  // 64 + 64 + 64 + 8 KiB
  CHECK(vmr.region().length == big.size());
  CHECK(vmr.segments()[3].length == 8 * 1024);
  CHECK(vmr.segments()[1].keys.rkey != vmr.segments()[0].keys.rkey);
  const RegisteredRegion* seg = vmr.segment_for(big.data() + 150 * 1024, 100);
  REQUIRE(seg != nullptr);
  CHECK(seg == &vmr.segments()[2]);
  CHECK(vmr.segment_for(big.data() + 64 * 1024 - 10, 20) == nullptr);  // crosses a boundary

  // A peer writes into the third segment with that segment's rkey.
  RemoteRegion third{reinterpret_cast<uint64_t>(seg->addr), static_cast<uint32_t>(seg->length),
                     seg->keys.rkey};
  auto p = connect(*t, *t, with_regions({third}));
  REQUIRE(p.server->post_recvs(1) == PostStatus::ok);
  char msg[8] = "segment";
  WriteRequest w{1, msg, sizeof msg, 0, third.addr + 10, third.rkey, 3, true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);
  REQUIRE(reap(*p.server, 1).size() == 1);
  CHECK(std::memcmp(big.data() + 128 * 1024 + 10, msg, sizeof msg) == 0);

  auto raw = t->register_raw(big.data(), big.size(), Access::local_write);
  REQUIRE_FALSE(raw.ok());
  CHECK(raw.error().is(Errc::too_large));
  auto ok_raw = t->register_raw(big.data(), 4096, Access::local_write);
  REQUIRE(ok_raw);
  CHECK(ok_raw->handle != nullptr);
  t->deregister_raw(*ok_raw);
}

TEST_CASE("close flushes pending receives and tells the peer", "[verbs]") {
  auto t = make_transport();
  auto p = connect(*t, *t);
  REQUIRE(p.server->post_recvs(3, 40) == PostStatus::ok);
  p.server->close();
  CHECK_FALSE(p.server->healthy());
  CHECK(p.server->error().is(Errc::closed));
  auto flushed = reap(*p.server, 3);
  REQUIRE(flushed.size() == 3);
  for (const auto& c : flushed) CHECK(c.status == WcStatus::flushed);
  WriteRequest w{1, nullptr, 0, 0, 0, 0, 0, true};
  CHECK(p.server->post_writes({&w, 1}) == PostStatus::disconnected);
  // The peer notices through its bootstrap socket.
  for (int i = 0; i < 1000 && p.client->healthy(); ++i)
    (void)p.client->wait(std::chrono::milliseconds(10));
  CHECK_FALSE(p.client->healthy());
  CHECK(p.client->error().is(Errc::connection_closed));
  INFO(p.client->error().message());
  CHECK_THAT(p.client->error().message(), Catch::Contains("server"));
}

TEST_CASE("a wrong pre-shared key is refused", "[verbs]") {
  auto t = make_transport();
  ConnectionOptions s, c;
  s.pre_shared_key = "right key";
  c.pre_shared_key = "wrong key";
  auto p = try_connect(*t, *t, s, c);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().is(Errc::auth_failed));
}

TEST_CASE("wait() returns once a completion is ready", "[verbs]") {
  auto t = make_transport();
  auto p = connect(*t, *t);
  REQUIRE(p.server->post_recvs(1) == PostStatus::ok);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    WriteRequest w{1, nullptr, 0, 0, 0, 0, 77, true};
    (void)p.client->post_writes({&w, 1});
  });
  Completion c[2];
  size_t n = 0;
  for (int i = 0; i < 100 && n == 0; ++i) {
    REQUIRE(p.server->wait(std::chrono::seconds(5)));
    n = p.server->poll(c);
  }
  writer.join();
  REQUIRE(n == 1);
  CHECK(c[0].imm == 77);
}

TEST_CASE("a peer that speaks late and then stalls is dropped connect_timeout after it arrived",
          "[verbs]") {
  // The peer connects, says nothing for 2 s, sends one byte of its hello and stops. Its
  // handshake must end connect_timeout (3 s) after it arrived, not 3 s after it spoke (5 s).
  using namespace std::chrono;
  auto t = make_transport();
  auto l = t->listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  ConnectionOptions so;
  so.node_id = "server";
  so.connect_timeout = 3s;
  auto accepted = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
  auto raw = bootstrap::connect_tcp((*l)->local_endpoint(), Deadline::after(5s));
  REQUIRE(raw.ok());
  const auto arrived = steady_clock::now();
  std::this_thread::sleep_for(2s);
  const char byte = 0;
  REQUIRE(::write(raw->get(), &byte, 1) == 1);
  auto r = accepted.get();
  const auto took = steady_clock::now() - arrived;
  REQUIRE_FALSE(r.ok());
  INFO(r.error().to_string() << "; after " << duration_cast<milliseconds>(took).count() << " ms");
  CHECK(r.error().is(Errc::timeout));
  CHECK(took < 4500ms);  // 3 s and some slack for a slow guest; the fresh timeout gave 5 s
}

TEST_CASE("tear-down releases every resource in a legal order", "[verbs]") {
  const auto before = destroy_failures();
  {
    auto t = make_transport();
    Ring ring(*t, 4096);
    auto p = connect(*t, *t, with_regions({ring.mr->remote()}));
    REQUIRE(p.server->post_recvs(2) == PostStatus::ok);
    // The transport goes first: connections and the MR keep the device state alive.
    t.reset();
  }
  CHECK(destroy_failures() == before);
}

}  // namespace rdmarepl::transport::verbs::test
