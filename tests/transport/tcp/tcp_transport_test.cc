// Behaviour specific to the TCP transport: its error messages, its registration table, and
// what it does with a peer that breaks the framing.
#include "rdmarepl/transport/tcp/tcp_transport.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include <atomic>

#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "rdmarepl/core/crc32c.h"
#include "transport/bootstrap/admission.h"
#include "transport/bootstrap/handshake.h"
#include "transport/bootstrap/socket.h"
#include "transport/pair_util.h"
#include "transport/tcp/frame.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::testing;
using namespace std::chrono_literals;

namespace {

bool has_text(const Error& e, std::string_view s) {
  return e.message().find(s) != std::string::npos;
}

// A hand-made peer of a listener: a raw socket that ran a genuine initiator handshake as
// `node_id`, and the connection the listener accepted for it (one receive posted), so that
// a test can then misbehave on the socket.
struct RawPeer {
  bootstrap::Fd raw;
  std::unique_ptr<Connection> server;
};

RawPeer accept_raw_peer(Listener& l, const ConnectionOptions& so, const std::string& node_id) {
  auto fut = std::async(std::launch::async, [&] { return l.accept(so, 10s); });
  auto raw = bootstrap::connect_tcp(l.local_endpoint(), Deadline::after(5s));
  REQUIRE(raw.ok());
  bootstrap::Hello hello;
  hello.node_id = node_id;
  REQUIRE(
      bootstrap::exchange(raw->get(), hello, bootstrap::Role::initiator, "", Deadline::after(5s))
          .ok());
  auto server = fut.get();
  REQUIRE(server.ok());
  REQUIRE((*server)->post_recvs(1, 0) == PostStatus::ok);
  return {std::move(raw).value(), std::move(server).value()};
}

// Polls `c` until it leaves the healthy state (10 s at most); every completion it gave.
std::vector<Completion> poll_until_failed(Connection& c) {
  Completion wc[4];
  std::vector<Completion> got;
  auto deadline = Deadline::after(10s);
  while (c.healthy() && !deadline.expired()) {
    (void)c.wait(100ms);
    size_t n = c.poll(wc);
    got.insert(got.end(), wc, wc + n);
  }
  got.insert(got.end(), wc, wc + c.poll(wc));
  return got;
}

struct Env {
  tcp::TcpTransport t;
  std::vector<uint8_t> src = std::vector<uint8_t>(8192, 0x11);
  std::vector<uint8_t> dst = std::vector<uint8_t>(8192, 0xab);
  std::unique_ptr<MemoryRegion> src_mr, dst_mr;
  Pair pair;
  std::vector<Completion> client, server;

  // `advertised`: how much of dst the follower side grants the peer in its handshake.
  explicit Env(uint32_t advertised = 8192) {
    src_mr = std::move(t.register_memory(src.data(), src.size(), Access::local_write).value());
    dst_mr = std::move(
        t.register_memory(dst.data(), dst.size(), Access::local_write | Access::remote_write)
            .value());
    ConnectionOptions co, so;
    co.node_id = "leader-1";
    so.node_id = "follower-2";
    so.regions = {dst_mr->remote()};
    so.regions.front().length = advertised;
    pair = make_pair(t, co, so);
  }
  WriteRequest write(uint32_t len, uint64_t off) {
    WriteRequest w;
    w.wr_id = 1;
    w.local_addr = src.data();
    w.length = len;
    w.lkey = src_mr->region().keys.lkey;
    w.remote_addr = dst_mr->remote().addr + off;
    w.rkey = dst_mr->remote().rkey;
    return w;
  }
  Error refused(WriteRequest w, bool post_recv = true) {
    if (post_recv) REQUIRE(pair.server->post_recvs(1, 0) == PostStatus::ok);
    REQUIRE(pair.client->post_writes({&w, 1}) == PostStatus::ok);
    REQUIRE(pump(pair, client, server, [&] { return !pair.server->healthy() && !client.empty(); }));
    return pair.server->error();
  }
};

}  // namespace

TEST_CASE("tcp: a forged rkey is reported naming the peer and the key", "[transport][tcp]") {
  Env env;
  auto w = env.write(64, 0);
  w.rkey ^= 0x0f0f0f0fu;
  auto e = env.refused(w);
  CHECK(e.is(Errc::remote_access));
  CHECK(has_text(e, "node 'leader-1'"));
  CHECK(has_text(e, fmt::format("rkey 0x{:08x}", w.rkey)));
  CHECK(has_text(e, "not registered here"));
  CHECK(env.client[0].status == WcStatus::remote_access_error);
  CHECK(has_text(env.pair.client->error(), "node 'follower-2'"));
  CHECK(has_text(env.pair.client->error(), "with a TCP NAK: remote access refused"));
  CHECK_FALSE(has_text(env.pair.client->error(), "IBV_"));
}

TEST_CASE("tcp: an out-of-range write is reported with the region's bounds", "[transport][tcp]") {
  Env env;
  auto e = env.refused(env.write(100, 8192 - 50));
  CHECK(e.is(Errc::remote_access));
  CHECK(has_text(e, "does not lie wholly inside"));
  CHECK(has_text(e, fmt::format("0x{:x}", env.dst_mr->remote().addr)));
  CHECK(std::all_of(env.dst.begin(), env.dst.end(), [](uint8_t b) { return b == 0xab; }));
}

TEST_CASE("tcp: a write past what the connection advertised is refused though registered",
          "[transport][tcp]") {
  // The follower registers an arena and advertises a ring inside it: a peer's write must
  // stay in the ring, as a write outside a memory region fails on verbs.
  {
    Env env(4096);
    auto e = env.refused(env.write(64, 4096 - 32));
    CHECK(e.is(Errc::remote_access));
    CHECK(has_text(e, "advertised"));
    CHECK(env.client[0].status == WcStatus::remote_access_error);
    CHECK(std::all_of(env.dst.begin(), env.dst.end(), [](uint8_t b) { return b == 0xab; }));
  }
  {
    Env env(4096);  // inside what it advertised: placed
    REQUIRE(env.pair.server->post_recvs(1, 0) == PostStatus::ok);
    auto w = env.write(64, 4096 - 64);
    REQUIRE(env.pair.client->post_writes({&w, 1}) == PostStatus::ok);
    REQUIRE(pump(env.pair, env.client, env.server, [&] { return !env.client.empty(); }));
    CHECK(env.client[0].status == WcStatus::success);
    CHECK(env.pair.server->healthy());
    CHECK(env.dst[4096 - 64] == 0x11);
  }
}

TEST_CASE("tcp: a huge length cannot wrap the range check", "[transport][tcp]") {
  Env env;
  auto w = env.write(16, 0);
  w.remote_addr = ~uint64_t{0} - 4;  // addr + len overflows
  auto e = env.refused(w);
  CHECK(e.is(Errc::remote_access));
}

TEST_CASE("tcp: a write with no receive posted names RNR on both sides", "[transport][tcp]") {
  Env env;
  auto e = env.refused(env.write(16, 0), /*post_recv=*/false);
  CHECK(has_text(e, "no receive was posted"));
  CHECK(env.client[0].status == WcStatus::rnr_retry_exceeded);
}

TEST_CASE("tcp: a peer that goes away fails outstanding writes as retry_exceeded",
          "[transport][tcp]") {
  Env env;
  env.pair.server.reset();  // no receive posted, no ack: the writes stay outstanding
  std::vector<WriteRequest> ws = {env.write(16, 0), env.write(16, 16)};
  ws[1].wr_id = 2;
  // The peer is gone before or after the post: either way no write succeeds.
  auto st = env.pair.client->post_writes(ws);
  REQUIRE((st == PostStatus::ok || st == PostStatus::disconnected));
  Completion c[8];
  std::vector<Completion> got;
  auto deadline = Deadline::after(10s);
  while (env.pair.client->healthy() && !deadline.expired()) {
    (void)env.pair.client->wait(100ms);
    size_t n = env.pair.client->poll(c);
    got.insert(got.end(), c, c + n);
  }
  size_t n = env.pair.client->poll(c);
  got.insert(got.end(), c, c + n);
  REQUIRE_FALSE(env.pair.client->healthy());
  CHECK(env.pair.client->error().is(Errc::connection_closed));
  // The cause is TCP's own: an orderly close (EOF) or a reset, never a verbs status.
  const auto& e = env.pair.client->error();
  CHECK((has_text(e, "closed the TCP connection (EOF)") ||
         has_text(e, "broke the TCP connection (ECONNRESET")));
  CHECK(has_text(e, "node 'follower-2'"));
  if (st == PostStatus::ok) {
    REQUIRE(got.size() == 2);
    CHECK(got[0].status == WcStatus::retry_exceeded);
    CHECK(got[1].status == WcStatus::flushed);
    // The log text of the failed completion is the connection's, not IBV_WC_RETRY_EXC_ERR.
    const std::string why = failure_reason(*env.pair.client, got[0].status);
    CHECK(why == e.message());
    CHECK(why.find("IBV_") == std::string::npos);
  }
}

TEST_CASE("tcp: a reset connection names ECONNRESET and the peer", "[transport][tcp]") {
  tcp::TcpTransport t;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  ConnectionOptions so;
  so.node_id = "follower";
  // Genuine handshake, then an abortive close (SO_LINGER 0 sends RST).
  auto [raw, server] = accept_raw_peer(**l, so, "crasher");
  linger lg{1, 0};
  REQUIRE(::setsockopt(raw.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
  raw.reset();
  const std::vector<Completion> got = poll_until_failed(*server);
  REQUIRE_FALSE(server->healthy());
  const Error e = server->error();
  CHECK(has_text(e, "node 'crasher'"));
  CHECK(has_text(e, "broke the TCP connection (ECONNRESET: Connection reset by peer)"));
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == WcStatus::flushed);
  const std::string why = failure_reason(*server, got[0].status);
  CHECK(why == e.message());
  CHECK(why.find("IBV_") == std::string::npos);
}

TEST_CASE("tcp: registration keys are random, non-zero and unique", "[transport][tcp]") {
  tcp::TcpTransport t;
  std::vector<uint8_t> buf(4096);
  std::set<uint32_t> rkeys, lkeys;
  std::vector<std::unique_ptr<MemoryRegion>> regions;
  for (int i = 0; i < 500; ++i) {
    auto r = t.register_memory(buf.data() + i, 16, Access::remote_write);
    REQUIRE(r.ok());
    CHECK((*r)->region().keys.rkey != 0);
    CHECK((*r)->region().keys.lkey != 0);
    rkeys.insert((*r)->region().keys.rkey);
    lkeys.insert((*r)->region().keys.lkey);
    regions.push_back(std::move(*r));
  }
  CHECK(rkeys.size() == 500);
  CHECK(lkeys.size() == 500);
  CHECK(*rkeys.rbegin() > 0x00ffffffu);  // not a small counter
  CHECK(t.registration_count() == 500);
  regions.clear();
  CHECK(t.registration_count() == 0);
}

TEST_CASE("tcp: options over their limits are refused before connecting", "[transport][tcp]") {
  tcp::TcpTransport t;
  ConnectionOptions o;
  o.send_queue_depth = 0;
  auto c = t.connect(Endpoint{"127.0.0.1", 1}, o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().is(Errc::invalid_argument));
  o.send_queue_depth = 16;
  o.app_data.assign(64 * 1024 + 1, 'x');
  c = t.connect(Endpoint{"127.0.0.1", 1}, o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().is(Errc::too_large));
}

TEST_CASE("tcp: the listener refuses garbage and a wrong key, then accepts a good peer",
          "[transport][tcp]") {
  tcp::TcpTransport t;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  auto ep = (*l)->local_endpoint();
  ConnectionOptions so;
  so.node_id = "follower";
  so.pre_shared_key = "k1";

  {  // random bytes on the port
    auto fut = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
    auto raw = bootstrap::connect_tcp(ep, Deadline::after(5s));
    REQUIRE(raw.ok());
    std::vector<uint8_t> junk(100);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 200);
    REQUIRE(bootstrap::send_all(raw->get(), junk, Deadline::after(5s), "listener").ok());
    auto r = fut.get();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::protocol_error));
    CHECK(has_text(r.error(), "127.0.0.1:"));
  }
  {  // a peer with the wrong key
    auto fut = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
    ConnectionOptions co;
    co.node_id = "intruder";
    co.pre_shared_key = "not-k1";
    auto c = t.connect(ep, co);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().is(Errc::auth_failed));
    auto r = fut.get();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::auth_failed));
    CHECK(has_text(r.error(), "pre-shared key"));
  }
  {  // the listener still works
    auto fut = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
    ConnectionOptions co;
    co.node_id = "leader";
    co.pre_shared_key = "k1";
    auto c = t.connect(ep, co);
    REQUIRE(c.ok());
    auto r = fut.get();
    REQUIRE(r.ok());
    CHECK((*r)->peer().node_id == "leader");
    // Both ends derived the same two session keys, one per direction.
    const auto& mine = (*c)->peer().session_keys;
    const auto& theirs = (*r)->peer().session_keys;
    REQUIRE(mine.set);
    REQUIRE(theirs.set);
    CHECK(mine.send == theirs.recv);
    CHECK(mine.recv == theirs.send);
    CHECK(mine.send != mine.recv);
    CHECK(mine.digest == theirs.digest);
    CHECK(mine.digest != mine.send);
    // A new connection with the same key gets other keys (fresh nonces).
    auto fut2 = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
    auto c2 = t.connect(ep, co);
    REQUIRE(c2.ok());
    REQUIRE(fut2.get().ok());
    CHECK((*c2)->peer().session_keys.send != mine.send);
    // The digest key depends on the pre-shared key alone: a leader hashes a batch once.
    CHECK((*c2)->peer().session_keys.digest == mine.digest);
  }
  {  // without a key there are no session keys
    ConnectionOptions open_so;
    open_so.node_id = "follower";
    auto fut = std::async(std::launch::async, [&] { return (*l)->accept(open_so, 10s); });
    ConnectionOptions co;
    co.node_id = "leader";
    auto c = t.connect(ep, co);
    REQUIRE(c.ok());
    REQUIRE(fut.get().ok());
    CHECK_FALSE((*c)->peer().session_keys.set);
  }
}

TEST_CASE("tcp: neither declined nor failing peers shut out another peer at their address",
          "[transport][tcp]") {
  // A deposed leader refused for its epoch keeps reconnecting from the host where the
  // leader that replaced it may run too: its refusals must not lock that one out.
  tcp::TcpTransport t;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  auto ep = (*l)->local_endpoint();
  std::atomic<uint64_t> refused{0};
  ConnectionOptions so;
  so.node_id = "follower";
  so.pre_shared_key = "k1";
  so.counters.refused = &refused;
  so.check_peer = [](std::string_view node, std::string_view, std::string_view) -> Status {
    if (node == "deposed") return Error(Errc::connection_refused, "deposed is not the leader");
    return ok_status();
  };
  auto attempt = [&](const std::string& node, const std::string& key) {
    auto fut = std::async(std::launch::async, [&] { return (*l)->accept(so, 2s); });
    ConnectionOptions co;
    co.node_id = node;
    co.pre_shared_key = key;
    co.connect_timeout = 2s;
    auto c = t.connect(ep, co);
    auto r = fut.get();
    return std::make_pair(c.ok() ? Status(ok_status()) : Status(c.error()),
                          r.ok() ? Status(ok_status()) : Status(r.error()));
  };
  const uint32_t declines = bootstrap::kFailuresBeforePacing + 2;
  for (uint32_t i = 0; i < declines; ++i) {
    auto [c, r] = attempt("deposed", "k1");
    REQUIRE_FALSE(c.ok());
    CHECK(has_text(c.error(), "deposed is not the leader"));
    REQUIRE_FALSE(r.ok());
  }
  CHECK(refused.load() == declines);  // still counted and refused every time
  {                                   // another peer from the same address is admitted at once
    auto [c, r] = attempt("leader", "k1");
    CHECK(c.ok());
    CHECK(r.ok());
  }
  // Handshakes that fail (a wrong key) pace the address: the real peer behind it waits
  // for the pace at most, and gets in.
  for (uint32_t i = 0; i < bootstrap::kFailuresBeforePacing + 3; ++i) {
    auto [c, r] = attempt("intruder", "not-k1");
    REQUIRE_FALSE(c.ok());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::auth_failed));
  }
  auto [c, r] = attempt("leader", "k1");
  CHECK(c.ok());
  CHECK(r.ok());
}

TEST_CASE("tcp: a peer that speaks late still gets the connect timeout from its accept",
          "[transport][tcp]") {
  // accept() is called in 400 ms slices, as the follower does; the peer connects after
  // ~100 ms and starts its handshake only ~1 s later. The listener holds the silent
  // connection across the slices (its deadline is connect_timeout, 10 s, from the accept)
  // and a later slice runs the handshake: the connection must come up.
  tcp::TcpTransport t;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  const auto ep = (*l)->local_endpoint();
  ConnectionOptions so;
  so.node_id = "follower";
  so.connect_timeout = 10s;
  auto fut = std::async(std::launch::async, [&]() -> Result<std::unique_ptr<Connection>> {
    const auto give_up = Deadline::after(8s);
    for (;;) {
      auto c = (*l)->accept(so, 400ms);
      if (c.ok() || !c.error().is(Errc::timeout) || give_up.expired()) return c;
    }
  });
  std::this_thread::sleep_for(100ms);
  // A raw socket: connected (accepted) now, its hello sent later by a real initiator
  // handshake over the same socket.
  auto raw = bootstrap::connect_tcp(ep, Deadline::after(5s));
  REQUIRE(raw.ok());
  std::this_thread::sleep_for(1s);
  bootstrap::Hello hello;
  hello.node_id = "leader";
  hello.kind = TransportKind::tcp;
  auto theirs =
      bootstrap::exchange(raw->get(), hello, bootstrap::Role::initiator, "", Deadline::after(5s));
  INFO((theirs.ok() ? std::string() : theirs.error().message()));
  CHECK(theirs.ok());
  auto r = fut.get();
  INFO((r.ok() ? std::string() : r.error().message()));
  REQUIRE(r.ok());
  CHECK((*r)->peer().node_id == "leader");
}

TEST_CASE("tcp: silent peers time out at their own deadline and never delay a speaking one",
          "[transport][tcp]") {
  tcp::TcpTransport t;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  const auto ep = (*l)->local_endpoint();
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> refused{0};
  ConnectionOptions so;
  so.node_id = "follower";
  so.connect_timeout = 500ms;
  so.max_handshakes = 8;  // two per address once four are in use
  so.counters = {&timeouts, &refused};
  auto silent = [&] {
    auto s = bootstrap::connect_tcp(ep, Deadline::after(5s));
    REQUIRE(s.ok());
    return std::move(*s);
  };
  std::vector<bootstrap::Fd> held;
  held.push_back(silent());
  held.push_back(silent());
  auto fut = std::async(std::launch::async, [&] {
    bootstrap::Hello hello;
    hello.node_id = "leader";
    hello.kind = TransportKind::tcp;
    auto raw = bootstrap::connect_tcp(ep, Deadline::after(5s));
    if (!raw.ok()) return false;
    return bootstrap::exchange(raw->get(), hello, bootstrap::Role::initiator, "",
                               Deadline::after(5s))
        .ok();
  });
  // Two silent connections are held; the one that speaks is handed over at once.
  const auto t0 = Clock::now();
  auto c = (*l)->accept(so, 2s);
  REQUIRE(c.ok());
  CHECK(Clock::now() - t0 < 400ms);
  CHECK(fut.get());
  // Two more silent ones are held (half of max_handshakes is then in use), a fifth from the
  // same address is closed at once; the held ones time out at their deadlines while
  // accept() is being called.
  for (int i = 0; i < 3; ++i) held.push_back(silent());
  CHECK((*l)->accept(so, 800ms).error().is(Errc::timeout));
  CHECK(refused.load() == 1);
  CHECK(timeouts.load() == 4);
}

TEST_CASE("tcp: a truncated frame fails the connection without a completion", "[transport][tcp]") {
  tcp::TcpTransport t;
  std::vector<uint8_t> dst(4096, 0xab);
  auto mr = t.register_memory(dst.data(), dst.size(), Access::local_write | Access::remote_write);
  REQUIRE(mr.ok());
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  ConnectionOptions so;
  so.node_id = "follower";
  so.regions = {(*mr)->remote()};
  // Genuine handshake, then half a frame header.
  auto [raw, server] = accept_raw_peer(**l, so, "liar");
  tcp::FrameHeader h;
  h.length = 1000;
  h.remote_addr = (*mr)->remote().addr;
  h.rkey = (*mr)->remote().rkey;
  h.seq = 1;
  uint8_t bytes[tcp::kFrameHeaderBytes];
  h.encode(bytes);
  REQUIRE(bootstrap::send_all(raw.get(), std::span(bytes, 20), Deadline::after(5s), "x").ok());
  raw.reset();
  const std::vector<Completion> got = poll_until_failed(*server);
  REQUIRE_FALSE(server->healthy());
  CHECK(has_text(server->error(), "truncated frame"));
  CHECK(has_text(server->error(), "node 'liar'"));
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == WcStatus::flushed);
  CHECK(std::all_of(dst.begin(), dst.end(), [](uint8_t b) { return b == 0xab; }));
}

TEST_CASE("tcp: the frame header layout matches docs/wire_format.md", "[transport][tcp]") {
  tcp::FrameHeader h;
  h.type = tcp::FrameType::write;
  h.flags = tcp::kFlagAckRequested;
  h.length = 5;
  h.remote_addr = 0x00007f0000001000ull;
  h.rkey = 0x9a3c11d5u;
  h.imm = 7;
  h.seq = 1;
  uint8_t b[tcp::kFrameHeaderBytes];
  h.encode(b);
  const uint8_t expected[tcp::kFrameHeaderBytes] = {0x54, 0x46, 0x01, 0x01, 0x00, 0x00, 0x00, 0x05,
                                                    0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
                                                    0x9a, 0x3c, 0x11, 0xd5, 0x00, 0x00, 0x00, 0x07,
                                                    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  CHECK(std::memcmp(b, expected, sizeof b) == 0);
  tcp::FrameHeader back;
  REQUIRE(back.decode(b));
  CHECK(back.remote_addr == h.remote_addr);
  CHECK(back.rkey == h.rkey);
  CHECK(back.seq == 1);

  uint8_t bad[tcp::kFrameHeaderBytes];
  std::memcpy(bad, b, sizeof bad);
  bad[0] = 0;  // magic
  CHECK_FALSE(back.decode(bad));
  std::memcpy(bad, b, sizeof bad);
  bad[2] = 9;  // type
  CHECK_FALSE(back.decode(bad));
  std::memcpy(bad, b, sizeof bad);
  bad[3] = 0x80;  // unknown write flag
  CHECK_FALSE(back.decode(bad));
  tcp::FrameHeader ack;
  ack.type = tcp::FrameType::ack;
  ack.seq = 3;
  ack.encode(bad);
  CHECK(back.decode(bad));
  bad[7] = 1;  // an ack carries no payload
  CHECK_FALSE(back.decode(bad));
}
