// The transport conformance suite: the RC verbs semantics every transport must copy.
// Only the Transport interface is used here; see conformance.h.
#include "transport/conformance/conformance.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <future>
#include <numeric>
#include <thread>

#include "rdmarepl/core/crc32c.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace std::chrono_literals;

namespace rdmarepl::transport::conformance {

ConnectedPair connect_pair(Transport& transport, const ConnectionOptions& client_options,
                           const ConnectionOptions& server_options) {
  ConnectedPair pair;
  auto l = transport.listen(listen_endpoint_under_test());
  REQUIRE(l.ok());
  pair.listener = std::move(*l);
  Endpoint where = pair.listener->local_endpoint();
  auto accepted = std::async(std::launch::async, [&] {
    return pair.listener->accept(server_options, std::chrono::seconds(20));
  });
  auto c = transport.connect(where, client_options);
  auto s = accepted.get();
  if (!c.ok()) FAIL("connect: " << c.error().to_string());
  if (!s.ok()) FAIL("accept: " << s.error().to_string());
  pair.client = std::move(*c);
  pair.server = std::move(*s);
  return pair;
}

bool pump(ConnectedPair& pair, Reaped& reaped, const std::function<bool(const Reaped&)>& done,
          std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  Completion buf[64];
  int idle = 0;
  while (!done(reaped)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    size_t n = 0, m = 0;
    if (pair.client) {
      n = pair.client->poll(buf);
      reaped.client.insert(reaped.client.end(), buf, buf + n);
    }
    if (pair.server) {
      m = pair.server->poll(buf);
      reaped.server.insert(reaped.server.end(), buf, buf + m);
    }
    if (n + m == 0 && ++idle > 100) std::this_thread::sleep_for(100us);
    if (n + m != 0) idle = 0;
  }
  return true;
}

}  // namespace rdmarepl::transport::conformance

using namespace rdmarepl::transport::conformance;

namespace {

constexpr size_t kBufBytes = 1 << 20;

// A transport, a registered source buffer on the client, a registered destination ring on
// the server, and a connected pair whose client knows the ring.
struct Env {
  std::unique_ptr<Transport> transport = make_transport_under_test();
  std::vector<uint8_t> src = std::vector<uint8_t>(kBufBytes);
  std::vector<uint8_t> dst = std::vector<uint8_t>(kBufBytes, 0xab);
  std::unique_ptr<MemoryRegion> src_mr;
  std::unique_ptr<MemoryRegion> dst_mr;
  ConnectedPair pair;

  explicit Env(uint32_t send_depth = 1024, uint32_t recv_depth = 1024,
               uint32_t server_initial_recvs = 0) {
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
    auto s = transport->register_memory(src.data(), src.size(), Access::local_write);
    auto d = transport->register_memory(dst.data(), dst.size(),
                                        Access::local_write | Access::remote_write);
    REQUIRE(s.ok());
    REQUIRE(d.ok());
    src_mr = std::move(*s);
    dst_mr = std::move(*d);
    ConnectionOptions co, so;
    co.node_id = "client";
    co.send_queue_depth = send_depth;
    co.recv_queue_depth = recv_depth;
    co.app_data = "client-app";
    so.node_id = "server";
    so.regions = {dst_mr->remote()};
    so.app_data = "server-app";
    so.send_queue_depth = send_depth;
    so.recv_queue_depth = recv_depth;
    so.initial_recvs = server_initial_recvs;
    pair = connect_pair(*transport, co, so);
  }

  Connection& client() { return *pair.client; }
  Connection& server() { return *pair.server; }
  RemoteRegion ring() const { return pair.client->peer().regions.at(0); }

  WriteRequest write(uint64_t wr_id, size_t src_off, uint32_t len, uint64_t dst_off, uint32_t imm,
                     bool signaled = true) const {
    WriteRequest w;
    w.wr_id = wr_id;
    w.local_addr = src.data() + src_off;
    w.length = len;
    w.lkey = src_mr->region().keys.lkey;
    w.remote_addr = ring().addr + dst_off;
    w.rkey = ring().rkey;
    w.imm = imm;
    w.signaled = signaled;
    return w;
  }
  uint32_t dst_crc() const { return crc32c::value(dst.data(), dst.size()); }
};

size_t count_status(const std::vector<Completion>& cs, WcStatus s) {
  return static_cast<size_t>(
      std::count_if(cs.begin(), cs.end(), [&](const Completion& c) { return c.status == s; }));
}
const Completion* find_wr(const std::vector<Completion>& cs, uint64_t wr_id) {
  for (const auto& c : cs)
    if (c.wr_id == wr_id) return &c;
  return nullptr;
}

// Posts `w` and expects the requester to complete it with `expected`, the responder's memory
// unchanged, and both ends to leave the healthy state.
void expect_refused(Env& env, WriteRequest w, WcStatus expected) {
  REQUIRE(env.server().post_recvs(4, 100) == PostStatus::ok);
  uint32_t before = env.dst_crc();
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(
      pump(env.pair, r, [&](const Reaped& x) { return find_wr(x.client, w.wr_id) != nullptr; }));
  CHECK(find_wr(r.client, w.wr_id)->status == expected);
  CHECK(find_wr(r.client, w.wr_id)->opcode == WcOpcode::rdma_write);
  CHECK(env.dst_crc() == before);
  CHECK_FALSE(env.client().healthy());
  CHECK_FALSE(env.client().error().message().empty());
  CHECK(count_status(r.server, WcStatus::success) == 0);
  // The responder also leaves the healthy state and says why; its posted receives flush.
  REQUIRE(pump(env.pair, r, [&](const Reaped&) { return !env.server().healthy(); }));
  CHECK_FALSE(env.server().error().message().empty());
  CHECK(env.client().post_writes({&w, 1}) == PostStatus::disconnected);
}

}  // namespace

TEST_CASE("conformance: register and deregister memory", "[conformance]") {
  auto t = make_transport_under_test();
  std::vector<uint8_t> a(8192), b(4096);
  auto ra = t->register_memory(a.data(), a.size(), Access::local_write | Access::remote_write);
  auto rb = t->register_memory(b.data(), b.size(), Access::local_write);
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  const auto& reg = (*ra)->region();
  CHECK(reg.addr == a.data());
  CHECK(reg.length == a.size());
  CHECK(reg.keys.lkey != 0);
  CHECK(reg.keys.rkey != 0);
  CHECK((*ra)->remote() == RemoteRegion{reinterpret_cast<uint64_t>(a.data()), 8192, reg.keys.rkey});
  CHECK((*rb)->region().keys.rkey != reg.keys.rkey);

  auto raw = t->register_raw(b.data(), b.size(), Access::local_write | Access::remote_write);
  REQUIRE(raw.ok());
  CHECK(raw->addr == b.data());
  CHECK(raw->keys.rkey != 0);
  t->deregister_raw(*raw);

  auto bad = t->register_memory(nullptr, 0, Access::local_write);
  CHECK_FALSE(bad.ok());
}

TEST_CASE("conformance: connect and accept exchange identities and regions", "[conformance]") {
  Env env;
  CHECK(env.client().healthy());
  CHECK(env.server().healthy());
  CHECK(env.client().peer().node_id == "server");
  CHECK(env.client().peer().app_data == "server-app");
  REQUIRE(env.client().peer().regions.size() == 1);
  CHECK(env.client().peer().regions[0] == env.dst_mr->remote());
  CHECK_FALSE(env.client().peer().address.empty());
  CHECK(env.server().peer().node_id == "client");
  CHECK(env.server().peer().app_data == "client-app");
  CHECK(env.server().peer().regions.empty());
  CHECK(env.client().error().message().empty());
}

TEST_CASE("conformance: writes with immediate place bytes and complete in order", "[conformance]") {
  Env env;
  constexpr int kWrites = 200;
  REQUIRE(env.server().post_recvs(kWrites, 1000) == PostStatus::ok);
  std::vector<uint32_t> lens;
  size_t off = 0;
  for (int i = 0; i < kWrites; ++i) {
    uint32_t len = static_cast<uint32_t>((i * 977) % 5000);
    auto w =
        env.write(static_cast<uint64_t>(i), off, len, off, 0xabc00000u + static_cast<uint32_t>(i));
    REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
    lens.push_back(len);
    off += len;
  }
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.server.size() == kWrites && x.client.size() == kWrites;
  }));
  for (int i = 0; i < kWrites; ++i) {
    const auto& s = r.server[static_cast<size_t>(i)];
    INFO("write " << i);
    CHECK(s.status == WcStatus::success);
    CHECK(s.opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(s.wr_id == 1000u + static_cast<uint64_t>(i));
    CHECK(s.imm == 0xabc00000u + static_cast<uint32_t>(i));
    CHECK(s.byte_len == lens[static_cast<size_t>(i)]);
    const auto& c = r.client[static_cast<size_t>(i)];
    CHECK(c.status == WcStatus::success);
    CHECK(c.opcode == WcOpcode::rdma_write);
    CHECK(c.wr_id == static_cast<uint64_t>(i));
  }
  CHECK(std::memcmp(env.dst.data(), env.src.data(), off) == 0);
  CHECK(env.dst[off] == 0xab);  // nothing beyond the last write
}

// The QP manager resizes a connection's completion queues while completions may be queued
// in them (src/transport/qp_manager.h): nothing queued is lost or reordered, a size below
// the creation size is raised to it, and the connection keeps working.
TEST_CASE("conformance: resizing the completion queues keeps queued completions in order",
          "[conformance]") {
  constexpr uint32_t kDepth = 64;
  Env env(kDepth, kDepth);
  constexpr int kWrites = 40;
  REQUIRE(env.server().post_recvs(kWrites + 8, 500) == PostStatus::ok);
  for (int i = 0; i < kWrites; ++i) {
    auto w = env.write(static_cast<uint64_t>(i), static_cast<size_t>(i) * 8, 8,
                       static_cast<uint64_t>(i) * 8, 0x7e000000u + static_cast<uint32_t>(i));
    REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  }
  std::vector<Completion> got;
  // Reaps at most `most` of the server's completions (a few at a time, so that the rest
  // stay queued in its completion queue) until it has `want` in all.
  auto reap = [&](size_t want, size_t most) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    Completion buf[4];
    while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
      const size_t room = std::min(most, want - got.size());
      const size_t n = env.server().poll(std::span<Completion>(buf, room));
      got.insert(got.end(), buf, buf + n);
      if (n == 0) std::this_thread::sleep_for(100us);
    }
    return got.size() >= want;
  };
  REQUIRE(reap(3, 3));
  const uint32_t created = env.server().completion_entries();
  auto grown = env.server().resize_completions(8 * kDepth);
  REQUIRE(grown.ok());
  if (created != 0) {  // a transport with completion queues of its own
    CHECK(*grown);
    CHECK(env.server().completion_entries() == 8 * kDepth);
  }
  REQUIRE(reap(10, 4));
  auto shrunk = env.server().resize_completions(1);  // below the creation size: raised to it
  REQUIRE(shrunk.ok());
  CHECK(env.server().completion_entries() == created);
  REQUIRE(reap(kWrites, 4));
  for (int i = 0; i < kWrites; ++i) {
    INFO("write " << i);
    const auto& c = got[static_cast<size_t>(i)];
    CHECK(c.status == WcStatus::success);
    CHECK(c.wr_id == 500u + static_cast<uint64_t>(i));
    CHECK(c.imm == 0x7e000000u + static_cast<uint32_t>(i));
  }
  // The client's side too, then one more write through both resized queues.
  REQUIRE(env.client().resize_completions(4 * kDepth).ok());
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) { return x.client.size() == kWrites; }));
  auto w = env.write(99, 0, 8, 1024, 0x7e0000ffu);
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.client.size() == kWrites + 1 && !x.server.empty();
  }));
  CHECK(r.server.back().imm == 0x7e0000ffu);
  CHECK(r.client.back().wr_id == 99u);
  CHECK(std::memcmp(env.dst.data(), env.src.data(), kWrites * 8) == 0);
}

TEST_CASE("conformance: a large write spanning many socket buffers arrives whole",
          "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(1, 7) == PostStatus::ok);
  auto w = env.write(1, 0, kBufBytes, 0, 99);
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r,
               [](const Reaped& x) { return x.server.size() == 1 && x.client.size() == 1; }));
  CHECK(r.server[0].byte_len == kBufBytes);
  CHECK(r.client[0].status == WcStatus::success);
  CHECK(env.dst == env.src);
}

// A second registered buffer on the client, for gathered writes: its bytes differ from
// the source's so that a segment placed from the wrong buffer shows.
struct GatherSource {
  std::vector<uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
  GatherSource(Transport& t, size_t n) : bytes(n) {
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 29 + 101);
    auto r = t.register_memory(bytes.data(), bytes.size(), Access::local_write);
    REQUIRE(r.ok());
    mr = std::move(*r);
  }
  LocalSegment segment(size_t off, uint32_t len) const {
    return LocalSegment{bytes.data() + off, len, mr->region().keys.lkey};
  }
};

TEST_CASE("conformance: a gathered write places its segments back to back", "[conformance]") {
  Env env;
  GatherSource value(*env.transport, kBufBytes / 2);
  GatherSource pad(*env.transport, 8);
  constexpr int kWrites = 40;
  REQUIRE(env.server().post_recvs(kWrites, 500) == PostStatus::ok);
  std::vector<uint8_t> expected;
  std::vector<uint32_t> lens;
  std::vector<WriteRequest> batch;
  for (int i = 0; i < kWrites; ++i) {
    // Header from the source, a value of growing size (the last ones span many socket
    // buffers) and 0..7 bytes of padding, each segment with its own lkey.
    const auto head = static_cast<uint32_t>(16 + i);
    const auto val = static_cast<uint32_t>(i < kWrites - 2 ? i * 997 : 128 * 1024);
    const auto tail = static_cast<uint32_t>(i % 8);
    auto w = env.write(static_cast<uint64_t>(i), static_cast<size_t>(i) * 64, head, expected.size(),
                       0x5e000000u + static_cast<uint32_t>(i), i % 3 == 0 || i == kWrites - 1);
    w.extra[0] = value.segment(static_cast<size_t>(i), val);
    w.extra[1] = pad.segment(0, tail);
    w.extra_count = 2;
    CHECK(w.total_length() == head + val + tail);
    const uint8_t* h = env.src.data() + static_cast<size_t>(i) * 64;
    expected.insert(expected.end(), h, h + head);
    expected.insert(expected.end(), value.bytes.data() + i, value.bytes.data() + i + val);
    expected.insert(expected.end(), pad.bytes.data(), pad.bytes.data() + tail);
    lens.push_back(head + val + tail);
    batch.push_back(w);
  }
  REQUIRE(expected.size() <= kBufBytes);
  REQUIRE(env.client().post_writes(batch) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.server.size() == kWrites && find_wr(x.client, kWrites - 1) != nullptr;
  }));
  for (int i = 0; i < kWrites; ++i) {
    const auto& c = r.server[static_cast<size_t>(i)];
    INFO("write " << i);
    CHECK(c.status == WcStatus::success);
    CHECK(c.imm == 0x5e000000u + static_cast<uint32_t>(i));
    CHECK(c.byte_len == lens[static_cast<size_t>(i)]);
  }
  CHECK(std::memcmp(env.dst.data(), expected.data(), expected.size()) == 0);
  CHECK(env.dst[expected.size()] == 0xab);  // nothing beyond the last write
}

TEST_CASE("conformance: a gathered write with a bad lkey in a later segment fails locally",
          "[conformance]") {
  Env env;
  GatherSource value(*env.transport, 4096);
  REQUIRE(env.server().post_recvs(4, 0) == PostStatus::ok);
  uint32_t before = env.dst_crc();
  auto w = env.write(9, 0, 64, 0, 1);
  w.extra[0] = value.segment(0, 1024);
  w.extra[0].lkey ^= 0xffffffffu;
  w.extra_count = 1;
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return !x.client.empty(); }));
  CHECK(r.client[0].wr_id == 9);
  CHECK((r.client[0].status == WcStatus::local_protection_error ||
         r.client[0].status == WcStatus::local_qp_error));
  CHECK_FALSE(env.client().healthy());
  CHECK(env.dst_crc() == before);
}

TEST_CASE("conformance: a write with too many segments is refused as invalid", "[conformance]") {
  Env env;
  auto w = env.write(1, 0, 64, 0, 1);
  w.extra_count = kMaxWriteSegments;  // one more than WriteRequest::extra holds
  CHECK(env.client().post_writes({&w, 1}) == PostStatus::invalid);
  w.extra_count = 1;
  w.extra[0] = LocalSegment{nullptr, 8, w.lkey};  // bytes at a null address
  CHECK(env.client().post_writes({&w, 1}) == PostStatus::invalid);
  CHECK(env.client().healthy());
}

TEST_CASE("conformance: a zero-length write delivers the immediate alone", "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(1, 5) == PostStatus::ok);
  uint32_t before = env.dst_crc();
  WriteRequest w;
  w.wr_id = 77;
  w.imm = 0xfeedf00d;
  w.rkey = env.ring().rkey;
  w.remote_addr = env.ring().addr;
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r,
               [](const Reaped& x) { return x.server.size() == 1 && x.client.size() == 1; }));
  CHECK(r.server[0].status == WcStatus::success);
  CHECK(r.server[0].imm == 0xfeedf00d);
  CHECK(r.server[0].byte_len == 0);
  CHECK(r.server[0].wr_id == 5);
  CHECK(r.client[0].wr_id == 77);
  CHECK(r.client[0].status == WcStatus::success);
  CHECK(env.dst_crc() == before);
}

TEST_CASE("conformance: a chained batch of 64 with only the last signaled", "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(64, 0) == PostStatus::ok);
  std::vector<WriteRequest> batch;
  for (uint32_t i = 0; i < 64; ++i)
    batch.push_back(env.write(i, i * 100, 100, i * 100, i, /*signaled=*/i == 63));
  REQUIRE(env.client().post_writes(batch) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r,
               [](const Reaped& x) { return x.server.size() == 64 && !x.client.empty(); }));
  // Give stray completions a chance to show up before counting them.
  pump(
      env.pair, r, [](const Reaped&) { return false; }, 100ms);
  REQUIRE(r.client.size() == 1);
  CHECK(r.client[0].wr_id == 63);
  CHECK(r.client[0].status == WcStatus::success);
  for (uint32_t i = 0; i < 64; ++i) CHECK(r.server[i].imm == i);
  CHECK(std::memcmp(env.dst.data(), env.src.data(), 6400) == 0);
}

TEST_CASE("conformance: the send and receive queues refuse work beyond their depth",
          "[conformance]") {
  Env env(/*send_depth=*/8, /*recv_depth=*/16);
  REQUIRE(env.server().post_recvs(16, 0) == PostStatus::ok);
  CHECK(env.server().post_recvs(1, 16) == PostStatus::queue_full);

  std::vector<WriteRequest> nine;
  for (uint32_t i = 0; i < 9; ++i) nine.push_back(env.write(i, 0, 10, i * 10, i));
  CHECK(env.client().post_writes(nine) == PostStatus::queue_full);  // all or nothing
  REQUIRE(env.client().post_writes(std::span(nine).first(8)) == PostStatus::ok);
  CHECK(env.client().post_writes(std::span(nine).subspan(8)) == PostStatus::queue_full);
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return x.client.size() == 8; }));
  CHECK(count_status(r.client, WcStatus::success) == 8);
  // The refused batch left no trace: exactly eight writes arrived.
  pump(
      env.pair, r, [](const Reaped&) { return false; }, 100ms);
  CHECK(r.server.size() == 8);
  // Room again once the completions were reaped.
  CHECK(env.client().post_writes(std::span(nine).subspan(8)) == PostStatus::ok);
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return x.client.size() == 9; }));
}

TEST_CASE("conformance: a write without a posted receive fails as RNR", "[conformance]") {
  Env env;
  auto w = env.write(1, 0, 64, 0, 1);
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return !x.client.empty(); }));
  CHECK(r.client[0].wr_id == 1);
  CHECK(r.client[0].status == WcStatus::rnr_retry_exceeded);
  CHECK_FALSE(env.client().healthy());
}

TEST_CASE("conformance: initial receives accept writes sent as soon as connect() returns",
          "[conformance]") {
  constexpr uint32_t kWrites = 8;
  Env env(1024, 1024, kWrites);
  for (uint32_t i = 0; i < kWrites; ++i) {
    auto w = env.write(i, i * 64, 64, i * 64, 0x700 + i);
    REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  }
  Reaped r;
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.server.size() == kWrites && x.client.size() == kWrites;
  }));
  for (uint32_t i = 0; i < kWrites; ++i) {
    INFO("write " << i);
    CHECK(r.client[i].status == WcStatus::success);
    CHECK(r.server[i].status == WcStatus::success);
    CHECK(r.server[i].wr_id == i);  // the initial receives are wr_ids 0..n-1
    CHECK(r.server[i].imm == 0x700 + i);
  }
  CHECK(std::memcmp(env.dst.data(), env.src.data(), kWrites * 64) == 0);
  CHECK(env.client().healthy());
}

TEST_CASE("conformance: a forged rkey is refused and the target is untouched", "[conformance]") {
  Env env;
  auto w = env.write(9, 0, 256, 0, 1);
  w.rkey = env.ring().rkey ^ 0x5a5a5a5au;
  expect_refused(env, w, WcStatus::remote_access_error);
}

TEST_CASE("conformance: a range that starts inside and ends past the region is refused",
          "[conformance]") {
  Env env;
  auto w = env.write(9, 0, 64, kBufBytes - 32, 1);
  expect_refused(env, w, WcStatus::remote_access_error);
}

TEST_CASE("conformance: a range that starts before the region is refused", "[conformance]") {
  Env env;
  auto w = env.write(9, 0, 64, 0, 1);
  w.remote_addr = env.ring().addr - 16;
  expect_refused(env, w, WcStatus::remote_access_error);
}

TEST_CASE("conformance: a region without remote write access is refused", "[conformance]") {
  Env env;
  auto ro = env.transport->register_memory(env.dst.data(), 4096, Access::local_write);
  REQUIRE(ro.ok());
  auto w = env.write(9, 0, 64, 0, 1);
  w.rkey = (*ro)->region().keys.rkey;
  expect_refused(env, w, WcStatus::remote_access_error);
}

TEST_CASE("conformance: the rkey of a deregistered region is refused", "[conformance]") {
  Env env;
  uint32_t old_rkey = env.ring().rkey;
  env.dst_mr.reset();
  auto w = env.write(9, 0, 64, 0, 1);
  w.rkey = old_rkey;
  expect_refused(env, w, WcStatus::remote_access_error);
}

// Devices differ in how they report a bad lkey: mlx5 and the TCP transport complete the
// request with IBV_WC_LOC_PROT_ERR, rxe with IBV_WC_LOC_QP_OP_ERR. Both fail the request,
// move the connection to the error state and leave the target untouched.
TEST_CASE("conformance: a wrong lkey fails the request with a local error", "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(4, 0) == PostStatus::ok);
  uint32_t before = env.dst_crc();
  auto w = env.write(3, 0, 128, 0, 1);
  w.lkey ^= 0xffffffffu;
  REQUIRE(env.client().post_writes({&w, 1}) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return !x.client.empty(); }));
  CHECK(r.client[0].wr_id == 3);
  CHECK((r.client[0].status == WcStatus::local_protection_error ||
         r.client[0].status == WcStatus::local_qp_error));
  CHECK_FALSE(env.client().healthy());
  CHECK(env.dst_crc() == before);
  CHECK((r.server.empty() || r.server[0].status == WcStatus::flushed));
}

TEST_CASE("conformance: requests after a failed one complete as flushed", "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(8, 0) == PostStatus::ok);
  std::vector<WriteRequest> batch = {env.write(1, 0, 100, 0, 1), env.write(2, 0, 100, 100, 2),
                                     env.write(3, 0, 100, 200, 3), env.write(4, 0, 100, 300, 4)};
  batch[1].rkey ^= 0x5a5a5a5au;
  REQUIRE(env.client().post_writes(batch) == PostStatus::ok);
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) {
    return find_wr(x.client, 1) && find_wr(x.client, 2) && find_wr(x.client, 3) &&
           find_wr(x.client, 4);
  }));
  CHECK(find_wr(r.client, 1)->status == WcStatus::success);
  CHECK(find_wr(r.client, 2)->status == WcStatus::remote_access_error);
  CHECK(find_wr(r.client, 3)->status == WcStatus::flushed);
  CHECK(find_wr(r.client, 4)->status == WcStatus::flushed);
  // Completions keep the posting order.
  CHECK(r.client[0].wr_id == 1);
  CHECK(r.client[1].wr_id == 2);
  // The first write landed before the failure, the others did not.
  CHECK(std::memcmp(env.dst.data(), env.src.data(), 100) == 0);
  CHECK(std::all_of(env.dst.begin() + 100, env.dst.begin() + 400,
                    [](uint8_t b) { return b == 0xab; }));
  CHECK(env.client().post_recvs(1, 0) == PostStatus::disconnected);
}

TEST_CASE("conformance: closing with requests pending flushes them", "[conformance]") {
  Env env;
  REQUIRE(env.server().post_recvs(16, 0) == PostStatus::ok);
  REQUIRE(env.client().post_recvs(4, 500) == PostStatus::ok);
  std::vector<WriteRequest> batch;
  for (uint32_t i = 0; i < 10; ++i) batch.push_back(env.write(i, 0, 1000, i * 1000, i));
  REQUIRE(env.client().post_writes(batch) == PostStatus::ok);
  env.client().close();
  CHECK_FALSE(env.client().healthy());
  Reaped r;
  REQUIRE(pump(env.pair, r, [](const Reaped& x) { return x.client.size() >= 14; }));
  for (uint32_t i = 0; i < 10; ++i) {
    const Completion* c = find_wr(r.client, i);
    REQUIRE(c != nullptr);
    CHECK((c->status == WcStatus::success || c->status == WcStatus::flushed));
  }
  for (uint64_t i = 500; i < 504; ++i) {
    const Completion* c = find_wr(r.client, i);
    REQUIRE(c != nullptr);
    CHECK(c->status == WcStatus::flushed);
  }
  CHECK(env.client().post_writes(batch) == PostStatus::disconnected);
}

TEST_CASE("conformance: wait() times out, and wakes for a peer's write", "[conformance]") {
  Env env;
  REQUIRE(env.client().post_recvs(1, 42) == PostStatus::ok);
  auto quiet = env.client().wait(30ms);
  REQUIRE_FALSE(quiet.ok());
  CHECK(quiet.error().is(Errc::timeout));

  // The server end writes into a region of the client's from another thread.
  std::vector<uint8_t> target(4096, 0);
  auto tmr = env.transport->register_memory(target.data(), target.size(),
                                            Access::local_write | Access::remote_write);
  REQUIRE(tmr.ok());
  auto writer = std::thread([&] {
    std::this_thread::sleep_for(50ms);
    WriteRequest w;
    w.wr_id = 1;
    w.local_addr = env.src.data();
    w.length = 16;
    w.lkey = env.src_mr->region().keys.lkey;
    w.remote_addr = reinterpret_cast<uint64_t>(target.data());
    w.rkey = (*tmr)->region().keys.rkey;
    w.imm = 5;
    REQUIRE(env.server().post_writes({&w, 1}) == PostStatus::ok);
    Completion c[4];
    while (env.server().poll(c) == 0 && env.server().healthy()) (void)env.server().wait(10ms);
  });
  std::vector<Completion> got;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (got.empty() && std::chrono::steady_clock::now() < deadline) {
    auto s = env.client().wait(10s);
    if (!s.ok()) {
      FAIL_CHECK("wait() did not wake: " << s.error().to_string());
      break;
    }
    Completion c[4];
    size_t n = env.client().poll(c);
    got.insert(got.end(), c, c + n);
  }
  writer.join();
  REQUIRE(got.size() == 1);
  CHECK(got[0].wr_id == 42);
  CHECK(got[0].imm == 5);
  CHECK(std::memcmp(target.data(), env.src.data(), 16) == 0);
}

TEST_CASE("conformance: both ends write to each other at once", "[conformance]") {
  Env env;
  std::vector<uint8_t> back(kBufBytes, 0);
  auto bmr = env.transport->register_memory(back.data(), back.size(),
                                            Access::local_write | Access::remote_write);
  REQUIRE(bmr.ok());
  constexpr uint32_t kN = 300;
  REQUIRE(env.server().post_recvs(kN, 0) == PostStatus::ok);
  REQUIRE(env.client().post_recvs(kN, 0) == PostStatus::ok);
  Reaped r;
  for (uint32_t i = 0; i < kN; ++i) {
    auto a = env.write(i, i * 3000, 3000, i * 3000, i);
    WriteRequest b = a;
    b.remote_addr = reinterpret_cast<uint64_t>(back.data()) + i * 3000;
    b.rkey = (*bmr)->region().keys.rkey;
    while (env.client().post_writes({&a, 1}) == PostStatus::queue_full)
      pump(env.pair, r, [](const Reaped&) { return true; });
    while (env.server().post_writes({&b, 1}) == PostStatus::queue_full)
      pump(env.pair, r, [](const Reaped&) { return true; });
    Completion c[16];
    size_t n = env.client().poll(c);
    r.client.insert(r.client.end(), c, c + n);
    n = env.server().poll(c);
    r.server.insert(r.server.end(), c, c + n);
  }
  REQUIRE(pump(env.pair, r, [&](const Reaped& x) {
    return x.client.size() == 2 * kN && x.server.size() == 2 * kN;
  }));
  CHECK(count_status(r.client, WcStatus::success) == 2 * kN);
  CHECK(count_status(r.server, WcStatus::success) == 2 * kN);
  CHECK(std::memcmp(env.dst.data(), env.src.data(), kN * 3000) == 0);
  CHECK(std::memcmp(back.data(), env.src.data(), kN * 3000) == 0);
}
