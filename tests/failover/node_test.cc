// ReplicaNode groups of three in one process over TCP on loopback: election, a leader
// killed under a write load (no acknowledged write lost), the deposed leader back with its
// old log, redirects. Against the in-process fake coordinator and against a real etcd.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "failover/etcd_server.h"
#include "failover/fake_coordinator.h"
#include "rdmarepl/failover/replica_node.h"

using namespace rdmarepl;
using namespace std::chrono_literals;

namespace {

struct KvStore {
  mutable std::mutex mu;
  std::map<std::string, std::string> data;
  void apply(const replication::Record& r) {
    std::lock_guard g(mu);
    if (r.op == replication::Op::put)
      data[std::string(r.key)] = std::string(r.value);
    else
      data.erase(std::string(r.key));
  }
  void clear() {
    std::lock_guard g(mu);
    data.clear();
  }
  void put(const std::string& k, const std::string& v) {
    std::lock_guard g(mu);
    data[k] = v;
  }
  std::map<std::string, std::string> copy() const {
    std::lock_guard g(mu);
    return data;
  }
};

using Node = failover::ReplicaNode<KvStore>;

struct Group {
  std::vector<failover::Member> members;
  std::filesystem::path root;
  std::shared_ptr<coordination::Coordinator> coord;
  std::string etcd_url;
  std::vector<std::unique_ptr<KvStore>> stores;
  std::vector<std::unique_ptr<Node>> nodes;

  Group(std::shared_ptr<coordination::Coordinator> c, std::string url, uint16_t base_port)
      : coord(std::move(c)), etcd_url(std::move(url)) {
    root = std::filesystem::temp_directory_path() /
           ("rdmarepl-node-test-" + std::to_string(::getpid()) + "-" + std::to_string(base_port));
    std::filesystem::remove_all(root);
    for (int i = 0; i < 3; ++i)
      members.push_back(
          {"n" + std::to_string(i), {"127.0.0.1", static_cast<uint16_t>(base_port + i)}});
    stores.resize(3);
    nodes.resize(3);
    for (size_t i = 0; i < 3; ++i) start(i);
  }
  ~Group() {
    for (auto& n : nodes) n.reset();
    std::filesystem::remove_all(root);
  }

  failover::NodeOptions options(size_t i) const {
    failover::NodeOptions o;
    o.group = "g";
    o.id = members[i].id;
    o.members = members;
    o.dir = (root / members[i].id).string();
    if (etcd_url.empty())
      o.coordinator = coord;
    else
      o.etcd.endpoints = {etcd_url};
    o.channel.transport = replication::TransportKind::tcp;
    o.channel.shards = 1;
    o.channel.ack_mode = replication::AckMode::quorum;
    o.channel.polling = replication::PollingMode::sleep;
    o.channel.ring_bytes = 1 << 20;
    o.channel.retain_bytes = 4 << 20;
    o.channel.max_value_bytes = 64 << 10;
    o.channel.zero_copy_pool_bytes = 0;
    o.channel.reconnect_interval = 20ms;
    o.channel.reconnect_max_interval = 200ms;
    return o;
  }
  void start(size_t i) {
    stores[i] = std::make_unique<KvStore>();
    auto n = Node::create(options(i), *stores[i]);
    REQUIRE(n.ok());
    nodes[i] = std::move(*n);
  }
  // A crash as far as the group can tell: the node stops renewing, resigns nothing.
  void kill(size_t i) { nodes[i].reset(); }

  int leader(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i] && nodes[i]->role() == failover::NodeRole::leader) return static_cast<int>(i);
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }
  // A write the way a store does it on the leader: apply, replicate, wait.
  bool write(size_t i, const std::string& k, const std::string& v) {
    stores[i]->put(k, v);
    auto t = nodes[i]->replicate(k, v);
    if (!t.ok()) return false;
    nodes[i]->flush();
    return nodes[i]->wait(*t, 2s).ok();
  }
  bool converged(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      bool same = true;
      const auto first = stores[0]->copy();
      for (size_t i = 1; i < stores.size(); ++i) same = same && stores[i]->copy() == first;
      if (same) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

void failover_scenario(Group& g) {
  int l = g.leader(10s);
  REQUIRE(l >= 0);
  const uint64_t e1 = g.nodes[l]->epoch();
  // A follower redirects to the leader.
  const size_t f = (l + 1) % 3;
  for (int i = 0; i < 500 && g.nodes[f]->role() != failover::NodeRole::follower; ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE(g.nodes[f]->role() == failover::NodeRole::follower);
  auto redirected = g.nodes[f]->replicate("k", "v");
  REQUIRE_FALSE(redirected.ok());
  CHECK(redirected.error().is(Errc::not_leader));
  CHECK(redirected.error().message().find(g.members[l].id) != std::string::npos);

  std::map<std::string, std::string> acked;
  for (int i = 0; i < 200; ++i) {
    const std::string k = "key" + std::to_string(i % 50), v = "v1-" + std::to_string(i);
    if (g.write(l, k, v)) acked[k] = v;
  }
  CHECK(acked.size() == 50);

  g.kill(l);
  const int l2 = g.leader(10s);
  REQUIRE(l2 >= 0);
  REQUIRE(l2 != l);
  CHECK(g.nodes[l2]->epoch() > e1);
  const auto after = g.stores[l2]->copy();
  size_t lost = 0;
  for (const auto& [k, v] : acked) {
    auto it = after.find(k);
    if (it == after.end() || it->second != v) ++lost;
  }
  CHECK(lost == 0);

  // The new leader takes writes; the old one comes back with its old log and follows.
  int ok = 0;
  for (int i = 0; i < 100; ++i)
    ok += g.write(l2, "key" + std::to_string(i % 50), "v2-" + std::to_string(i));
  CHECK(ok == 100);
  g.start(l);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         g.nodes[l]->role() != failover::NodeRole::follower)
    std::this_thread::sleep_for(20ms);
  CHECK(g.nodes[l]->role() == failover::NodeRole::follower);
  CHECK(g.nodes[l]->leader().id == g.members[l2].id);
  CHECK(g.converged(10s));
  CHECK(g.stores[l]->copy().at("key49") == "v2-99");
}

}  // namespace

TEST_CASE(
    "ReplicaNode: a killed leader is replaced, nothing acknowledged is lost (fake "
    "coordinator)",
    "[failover]") {
  auto fake = std::make_shared<test::FakeCoordinator>();
  Group g(fake, "", static_cast<uint16_t>(31000 + (::getpid() % 200) * 8));
  failover_scenario(g);
}

TEST_CASE("ReplicaNode: a killed leader is replaced, nothing acknowledged is lost (etcd)",
          "[failover][etcd]") {
  if (!test::EtcdServer::available()) {
    WARN("skipped: /usr/bin/etcd is not installed (Debian etcd-server; scripts/setup installs it)");
    return;
  }
  const int port = 24790 + static_cast<int>(::getpid() % 500) * 2;
  test::EtcdServer etcd(port);
  coordination::EtcdOptions eo;
  eo.endpoints = {etcd.url()};
  auto probe = coordination::make_etcd_coordinator(eo);
  REQUIRE(probe.ok());
  REQUIRE(test::EtcdServer::wait_ready(**probe));
  Group g(nullptr, etcd.url(), static_cast<uint16_t>(33000 + (::getpid() % 200) * 8));
  failover_scenario(g);
}

TEST_CASE("ReplicaNode: options are checked", "[failover]") {
  failover::NodeOptions o;
  CHECK_FALSE(failover::validate(o).ok());
  o.group = "g";
  o.id = "a";
  o.members = {{"a", {"127.0.0.1", 1}}, {"a", {"127.0.0.1", 2}}};
  o.dir = "/tmp/x";
  o.coordinator = std::make_shared<test::FakeCoordinator>();
  auto twice = failover::validate(o);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message().find("twice") != std::string::npos);
  o.members = {{"a", {"127.0.0.1", 1}}};
  o.channel.shards = 4;
  auto shards = failover::validate(o);
  REQUIRE_FALSE(shards.ok());
  CHECK(shards.error().message().find("shards = 1") != std::string::npos);
  o.channel.shards = 1;
  CHECK(failover::validate(o).ok());
}
