#include "transport/bootstrap/handshake.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "rdmarepl/core/byte_order.h"
#include "transport/bootstrap/relay.h"
#include "transport/bootstrap/socket.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::bootstrap;
using namespace std::chrono_literals;

namespace {

struct Pair {
  Fd a, b;
};
Pair socket_pair() {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  return {Fd(fds[0]), Fd(fds[1])};
}

Hello hello_of(std::string node, uint64_t addr) {
  Hello h;
  h.node_id = std::move(node);
  h.regions = {{addr, 4096, 0x1234}};
  h.app_data = "app";
  return h;
}

struct Outcome {
  Result<Hello> initiator;
  Result<Hello> responder;
};

Outcome run(std::string_view key_i, std::string_view key_r,
            TransportKind kind_i = TransportKind::tcp, TransportKind kind_r = TransportKind::tcp) {
  auto p = socket_pair();
  auto mine_r = hello_of("responder", 0x2000);
  mine_r.kind = kind_r;
  auto fut = std::async(std::launch::async, [&] {
    return exchange(p.b.get(), mine_r, Role::responder, key_r, Deadline::after(10s));
  });
  auto mine_i = hello_of("initiator", 0x1000);
  mine_i.kind = kind_i;
  auto ri = exchange(p.a.get(), mine_i, Role::initiator, key_i, Deadline::after(10s));
  if (!ri.ok()) p.a.reset();  // the responder must not wait for us any longer
  auto rr = fut.get();
  return {std::move(ri), std::move(rr)};
}

bool contains(const Error& e, std::string_view text) {
  return e.message().find(text) != std::string::npos;
}

using test::relay;

}  // namespace

TEST_CASE("handshake exchanges Hellos without a key", "[transport][bootstrap]") {
  auto o = run("", "");
  REQUIRE(o.initiator.ok());
  REQUIRE(o.responder.ok());
  CHECK(o.initiator->node_id == "responder");
  CHECK(o.initiator->regions == std::vector<RemoteRegion>{{0x2000, 4096, 0x1234}});
  CHECK(o.responder->node_id == "initiator");
  CHECK(o.responder->app_data == "app");
}

TEST_CASE("handshake with the same key on both sides succeeds", "[transport][bootstrap]") {
  auto o = run("s3cret", "s3cret");
  REQUIRE(o.initiator.ok());
  REQUIRE(o.responder.ok());
  CHECK(o.initiator->regions.front().addr == 0x2000);
  CHECK(o.responder->regions.front().addr == 0x1000);
}

TEST_CASE("a wrong key is refused on both sides, naming the reason", "[transport][bootstrap]") {
  auto o = run("wrong", "s3cret");
  REQUIRE_FALSE(o.responder.ok());
  CHECK(o.responder.error().is(Errc::auth_failed));
  CHECK(contains(o.responder.error(), "does not know our pre-shared key"));
  CHECK(contains(o.responder.error(), "as responder"));
  REQUIRE_FALSE(o.initiator.ok());
  CHECK(o.initiator.error().is(Errc::auth_failed));
  CHECK(contains(o.initiator.error(), "refused us"));
}

TEST_CASE("a missing key on either side is refused", "[transport][bootstrap]") {
  auto o1 = run("", "s3cret");
  REQUIRE_FALSE(o1.responder.ok());
  CHECK(o1.responder.error().is(Errc::auth_failed));
  CHECK(contains(o1.responder.error(), "the peer has none"));
  REQUIRE_FALSE(o1.initiator.ok());

  auto o2 = run("s3cret", "");
  REQUIRE_FALSE(o2.initiator.ok());
  CHECK(o2.initiator.error().is(Errc::auth_failed));
  REQUIRE_FALSE(o2.responder.ok());
}

TEST_CASE("mismatched transport kinds are refused", "[transport][bootstrap]") {
  auto o = run("", "", TransportKind::verbs, TransportKind::tcp);
  REQUIRE_FALSE(o.responder.ok());
  CHECK(o.responder.error().is(Errc::unsupported));
  CHECK(contains(o.responder.error(), "kind 2"));
  REQUIRE_FALSE(o.initiator.ok());
}

TEST_CASE("garbage instead of a handshake is a protocol error", "[transport][bootstrap]") {
  auto p = socket_pair();
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::write(p.a.get(), junk, sizeof junk) == static_cast<ssize_t>(sizeof junk));
  auto r = exchange(p.b.get(), hello_of("r", 1), Role::responder, "", Deadline::after(5s));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::protocol_error));
  CHECK(contains(r.error(), "not an rdmarepl peer"));
}

TEST_CASE("a wrong version is refused with both versions named", "[transport][bootstrap]") {
  auto p = socket_pair();
  uint8_t open[8 + 40] = {1, 0, 0, 0};
  store_be32(open + 4, 40);
  store_be32(open + 8, 0x52444d52);
  store_be16(open + 12, 7);
  open[14] = 1;
  REQUIRE(::write(p.a.get(), open, sizeof open) == static_cast<ssize_t>(sizeof open));
  auto r = exchange(p.b.get(), hello_of("r", 1), Role::responder, "", Deadline::after(5s));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::unsupported));
  CHECK(contains(r.error(), "version 7, we speak version 1"));
}

TEST_CASE("an oversized message is refused before it is read", "[transport][bootstrap]") {
  auto p = socket_pair();
  uint8_t hdr[8] = {1, 0, 0, 0};
  store_be32(hdr + 4, 0x7fffffff);
  REQUIRE(::write(p.a.get(), hdr, sizeof hdr) == 8);
  auto r = exchange(p.b.get(), hello_of("r", 1), Role::responder, "", Deadline::after(5s));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::protocol_error));
  CHECK(contains(r.error(), "exceeds its limit"));
}

TEST_CASE("a silent peer times out", "[transport][bootstrap]") {
  auto p = socket_pair();
  auto r = exchange(p.b.get(), hello_of("r", 1), Role::responder, "", Deadline::after(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::timeout));
}

TEST_CASE("a replayed initiator transcript fails authentication", "[transport][bootstrap]") {
  // Record a genuine initiator's bytes through a relay.
  auto client = socket_pair();
  auto server = socket_pair();
  std::vector<uint8_t> from_initiator, from_responder;
  std::thread up([&] { relay(client.b.get(), server.a.get(), from_initiator); });
  std::thread down([&] { relay(server.a.get(), client.b.get(), from_responder); });
  auto fut = std::async(std::launch::async, [&] {
    return exchange(server.b.get(), hello_of("r", 2), Role::responder, "k", Deadline::after(10s));
  });
  auto ri = exchange(client.a.get(), hello_of("i", 1), Role::initiator, "k", Deadline::after(10s));
  REQUIRE(ri.ok());
  REQUIRE(fut.get().ok());
  client.a.reset();
  server.b.reset();
  up.join();
  down.join();
  REQUIRE(from_initiator.size() > 48);

  // Replay them to a fresh responder: its nonce differs, so the proof no longer matches.
  auto p = socket_pair();
  REQUIRE(::write(p.a.get(), from_initiator.data(), from_initiator.size()) ==
          static_cast<ssize_t>(from_initiator.size()));
  auto r = exchange(p.b.get(), hello_of("r", 2), Role::responder, "k", Deadline::after(5s));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::auth_failed));
}

TEST_CASE("socket helpers connect over loopback and run the handshake", "[transport][bootstrap]") {
  auto l = listen_tcp(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  auto ep = local_endpoint(l->get());
  REQUIRE(ep.ok());
  CHECK(ep->port != 0);
  auto fut = std::async(std::launch::async, [&]() -> Result<Hello> {
    auto s = accept_tcp(l->get(), Deadline::after(10s));
    if (!s) return std::move(s).error();
    return exchange(s->get(), hello_of("r", 2), Role::responder, "k", Deadline::after(10s));
  });
  auto c = connect_tcp(*ep, Deadline::after(10s));
  REQUIRE(c.ok());
  CHECK(peer_address(c->get()) == ep->to_string());
  auto ri = exchange(c->get(), hello_of("i", 1), Role::initiator, "k", Deadline::after(10s));
  REQUIRE(ri.ok());
  CHECK(ri->node_id == "r");
  CHECK(fut.get().ok());
}

TEST_CASE("connect to a closed port is refused with advice", "[transport][bootstrap]") {
  Endpoint closed;
  {
    auto l = listen_tcp(Endpoint{"127.0.0.1", 0});
    REQUIRE(l.ok());
    closed = local_endpoint(l->get()).value();
  }
  auto c = connect_tcp(closed, Deadline::after(2s));
  REQUIRE_FALSE(c.ok());
  CHECK(contains(c.error(), "nothing is listening"));
}

TEST_CASE("the responder's peer check refuses an initiator with a Reject that carries why",
          "[transport][bootstrap]") {
  auto p = socket_pair();
  std::string seen_node, seen_app;
  const PeerCheck check = [&](std::string_view node, std::string_view, std::string_view app) {
    seen_node = node;
    seen_app = app;
    return Status(Error(Errc::connection_refused, "not you: epoch 1 is below 2"));
  };
  auto fut = std::async(std::launch::async, [&] {
    return exchange(p.b.get(), hello_of("responder", 0x2000), Role::responder, "s3cret",
                    Deadline::after(10s), nullptr, &check);
  });
  auto ri = exchange(p.a.get(), hello_of("initiator", 0x1000), Role::initiator, "s3cret",
                     Deadline::after(10s));
  auto rr = fut.get();
  CHECK(seen_node == "initiator");  // consulted with the authenticated Hello
  CHECK(seen_app == "app");
  REQUIRE_FALSE(rr.ok());
  CHECK(rr.error().is(Errc::connection_refused));
  CHECK(contains(rr.error(), "as responder failed: not you: epoch 1 is below 2"));
  REQUIRE_FALSE(ri.ok());
  CHECK(ri.error().is(Errc::connection_refused));
  CHECK(contains(ri.error(), "the peer refused us: not you: epoch 1 is below 2"));

  // A check that accepts changes nothing.
  auto q = socket_pair();
  const PeerCheck yes = [](std::string_view, std::string_view, std::string_view) {
    return ok_status();
  };
  auto ok_fut = std::async(std::launch::async, [&] {
    return exchange(q.b.get(), hello_of("responder", 0x2000), Role::responder, "",
                    Deadline::after(10s), nullptr, &yes);
  });
  CHECK(
      exchange(q.a.get(), hello_of("initiator", 0x1000), Role::initiator, "", Deadline::after(10s))
          .ok());
  CHECK(ok_fut.get().ok());
}
