// A leader and followers in this process over the TCP transport on 127.0.0.1, each
// follower with a ReadServer, for the remote-read tests.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/reads/read_client.h"
#include "rdmarepl/reads/read_server.h"
#include "replication/loopback_options.h"

namespace rdmarepl::test {

// A store whose get() may run while apply() runs (a reader-writer lock).
struct SharedMapStore {
  mutable std::shared_mutex mu;
  std::map<std::string, std::string, std::less<>> data;

  void apply(const replication::Record& r) {
    std::unique_lock lock(mu);
    if (r.op == replication::Op::put)
      data[std::string(r.key)] = std::string(r.value);
    else
      data.erase(std::string(r.key));
  }
  bool get(std::string_view key, std::string& out) const {
    std::shared_lock lock(mu);
    auto it = data.find(key);
    if (it == data.end()) return false;
    out.assign(it->second);
    return true;
  }
  void put(std::string_view k, std::string_view v) {
    std::unique_lock lock(mu);
    data[std::string(k)] = std::string(v);
  }
};

using ReadChannel = ReplicationChannel<SharedMapStore>;

// Key `i` of the read tests and its value: 200 to 249 bytes that only key `i` has.
inline std::string read_key(int i) {
  return "k-" + std::to_string(i);
}
inline std::string read_value(int i) {
  std::string v = "value-" + std::to_string(i) + "-";
  v.resize(200 + static_cast<size_t>(i % 50), static_cast<char>('a' + i % 26));
  return v;
}

// A server publishes its counters after the round that sent the response: wait for them.
template <class Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 5000 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

struct ReadCluster {
  ChannelOptions options;
  SharedMapStore leader_store;
  std::vector<std::unique_ptr<SharedMapStore>> stores;
  std::vector<std::unique_ptr<ReadChannel>> followers;
  std::vector<std::unique_ptr<reads::ReadServer<SharedMapStore>>> servers;
  std::unique_ptr<ReadChannel> leader;
  std::unique_ptr<reads::ReadServer<SharedMapStore>> leader_server;

  explicit ReadCluster(int n, reads::ReadServerOptions so = {}) : options(loopback_options()) {
    options.shards = 2;
    options.transport = TransportKind::tcp;
    options.max_value_bytes = 64 * 1024;
    options.retain_bytes = 8 << 20;
    for (int i = 0; i < n; ++i) {
      stores.push_back(std::make_unique<SharedMapStore>());
      ChannelOptions fo = loopback_follower(options, 0);
      fo.listen = {"127.0.0.1", 0};
      fo.transport = TransportKind::tcp;
      auto f = ReadChannel::create(fo, *stores.back());
      INFO((f.ok() ? std::string() : f.error().message()));
      REQUIRE(f.ok());
      followers.push_back(std::move(*f));
      options.peers.push_back(followers.back()->local_endpoint());
      so.listen = {"127.0.0.1", 0};
      auto s = reads::ReadServer<SharedMapStore>::create(so, *stores.back(), *followers.back());
      INFO((s.ok() ? std::string() : s.error().message()));
      REQUIRE(s.ok());
      servers.push_back(std::move(*s));
    }
    options.role = Role::leader;
    auto l = ReadChannel::create(options, leader_store);
    INFO((l.ok() ? std::string() : l.error().message()));
    REQUIRE(l.ok());
    leader = std::move(*l);
  }
  // The leader's store also answers reads (Consistency::leader).
  void serve_leader() {
    reads::ReadServerOptions so;
    so.listen = {"127.0.0.1", 0};
    so.leader = true;
    auto s = reads::ReadServer<SharedMapStore>::create(so, leader_store, *leader);
    REQUIRE(s.ok());
    leader_server = std::move(*s);
  }
  // Writes through the leader as an application does: its own store, then replicate().
  Ticket write(const std::string& k, const std::string& v) {
    leader_store.put(k, v);
    auto w = leader->replicate(k, v);
    REQUIRE(w.ok());
    return w.ticket;
  }
  reads::ReadClientOptions client_options() const {
    reads::ReadClientOptions o;
    for (const auto& s : servers) o.replicas.push_back(s->local_endpoint());
    if (leader_server) o.leader = leader_server->local_endpoint();
    return o;
  }
  std::unique_ptr<reads::ReadClient> client() const {
    auto c = reads::ReadClient::connect(client_options());
    INFO((c.ok() ? std::string() : c.error().message()));
    REQUIRE(c.ok());
    return std::move(*c);
  }
};

}  // namespace rdmarepl::test
