// The Coordinator conformance suite, run against the in-process fake and a real etcd
// (started by the test; without /usr/bin/etcd the etcd half says why it is skipped).
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <thread>

#include "failover/etcd_server.h"
#include "failover/fake_coordinator.h"
#include "rdmarepl/coordination/etcd_coordinator.h"

using namespace rdmarepl;
using namespace std::chrono_literals;

namespace {

void conformance(coordination::Coordinator& c) {
  SECTION("a campaign wins when nobody leads; the epoch grows across leaderships") {
    auto a = c.grant_lease(1s);
    auto b = c.grant_lease(1s);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->second >= 1s);
    auto none = c.leader("/t/e1");
    REQUIRE(none.ok());
    CHECK_FALSE(none->held());
    auto won = c.campaign("/t/e1", "A", a->first);
    REQUIRE(won.ok());
    CHECK(won->lease == a->first);
    CHECK(won->value == "A");
    const uint64_t e1 = won->epoch;
    CHECK(e1 > 0);
    auto lost = c.campaign("/t/e1", "B", b->first);
    REQUIRE(lost.ok());
    CHECK(lost->lease == a->first);
    CHECK(lost->epoch == e1);
    CHECK(lost->value == "A");
    // Resigning another epoch touches nothing; resigning ours frees the election.
    REQUIRE(c.resign("/t/e1", e1 + 1000).ok());
    CHECK(c.leader("/t/e1")->epoch == e1);
    REQUIRE(c.resign("/t/e1", e1).ok());
    CHECK_FALSE(c.leader("/t/e1")->held());
    auto next = c.campaign("/t/e1", "B", b->first);
    REQUIRE(next.ok());
    CHECK(next->lease == b->first);
    CHECK(next->epoch > e1);
    REQUIRE(c.revoke_lease(a->first).ok());
    REQUIRE(c.revoke_lease(b->first).ok());
    CHECK_FALSE(c.leader("/t/e1")->held());
  }
  SECTION("a lease nobody renews expires and takes its keys; a renewed one stays") {
    auto dead = c.grant_lease(1s);
    auto live = c.grant_lease(1s);
    REQUIRE(dead.ok());
    REQUIRE(live.ok());
    REQUIRE(c.put("/t/l/dead", "x", dead->first).ok());
    REQUIRE(c.put("/t/l/live", "y", live->first).ok());
    REQUIRE(c.campaign("/t/e2", "D", dead->first).ok());
    const auto until = std::chrono::steady_clock::now() + std::max(dead->second, 1000ms) + 1500ms;
    while (std::chrono::steady_clock::now() < until) {
      REQUIRE(c.keep_alive(live->first).ok());
      std::this_thread::sleep_for(200ms);
    }
    auto k = c.keep_alive(dead->first);
    REQUIRE_FALSE(k.ok());
    CHECK(k.error().is(Errc::not_found));
    CHECK_FALSE(c.get("/t/l/dead")->has_value());
    CHECK(c.get("/t/l/live")->has_value());
    CHECK_FALSE(c.leader("/t/e2")->held());
    REQUIRE(c.revoke_lease(live->first).ok());
    CHECK_FALSE(c.get("/t/l/live")->has_value());
  }
  SECTION("compare-and-put, list and erase by prefix") {
    REQUIRE(c.erase_prefix("/t/kv/").ok());
    auto first = c.compare_and_put("/t/kv/a", "1", 0, 0);
    REQUIRE(first.ok());
    CHECK(*first);
    auto again = c.compare_and_put("/t/kv/a", "2", 0, 0);
    REQUIRE(again.ok());
    CHECK_FALSE(*again);
    auto a = c.get("/t/kv/a");
    REQUIRE(a.ok());
    REQUIRE(a->has_value());
    CHECK((*a)->value == "1");
    auto swap = c.compare_and_put("/t/kv/a", "2", (*a)->mod_revision, 0);
    REQUIRE(swap.ok());
    CHECK(*swap);
    REQUIRE(c.put("/t/kv/b", std::string("bin\0ary", 7), 0).ok());
    REQUIRE(c.put("/t/kw", "outside", 0).ok());
    auto l = c.list("/t/kv/");
    REQUIRE(l.ok());
    REQUIRE(l->size() == 2);
    CHECK((*l)[0].key == "/t/kv/a");
    CHECK((*l)[0].value == "2");
    CHECK((*l)[1].value == std::string("bin\0ary", 7));
    REQUIRE(c.erase_prefix("/t/kv/").ok());
    CHECK(c.list("/t/kv/")->empty());
    CHECK(c.get("/t/kw")->has_value());
  }
}

}  // namespace

TEST_CASE("Coordinator conformance: the in-process fake", "[failover]") {
  test::FakeCoordinator fake;
  conformance(fake);
}

TEST_CASE("Coordinator conformance: etcd", "[failover][etcd]") {
  if (!test::EtcdServer::available()) {
    WARN("skipped: /usr/bin/etcd is not installed (Debian etcd-server; scripts/setup installs it)");
    return;
  }
  test::EtcdServer etcd(23790 + static_cast<int>(::getpid() % 500) * 2);
  coordination::EtcdOptions o;
  o.endpoints = {etcd.url()};
  auto c = coordination::make_etcd_coordinator(o);
  REQUIRE(c.ok());
  REQUIRE(test::EtcdServer::wait_ready(**c));
  SECTION("lease 0 is refused") {
    auto z = (*c)->grant_lease(0ms);
    REQUIRE_FALSE(z.ok());
    CHECK(z.error().message().find("1000 ms") != std::string::npos);
  }
  conformance(**c);
}

TEST_CASE("EtcdCoordinator: options and an unreachable etcd", "[failover]") {
  coordination::EtcdOptions o;
  CHECK_FALSE(coordination::make_etcd_coordinator(o).ok());
  o.endpoints = {"127.0.0.1:2379"};
  auto bad = coordination::make_etcd_coordinator(o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("http://") != std::string::npos);
  o.endpoints = {"http://127.0.0.1:9"};  // nothing listens on the discard port
  o.request_timeout = 200ms;
  auto c = coordination::make_etcd_coordinator(o);
  REQUIRE(c.ok());
  auto l = (*c)->leader("/t/x");
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().message().find("no etcd endpoint answered") != std::string::npos);
}
