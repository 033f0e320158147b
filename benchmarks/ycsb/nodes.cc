// The nodes of one YCSB run (nodes.h).
#include "nodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::ycsb {
namespace {

Status start_local_followers(const RunOptions& o, Nodes& n, replication::ChannelOptions& lo) {
  for (uint32_t i = 0; i < o.followers; ++i) {
    n.stores.push_back(std::make_unique<Store>());
    replication::ChannelOptions fo = node_options(o);
    fo.role = replication::Role::follower;
    fo.listen = {"127.0.0.1", 0};
    auto f = Channel::create(fo, *n.stores.back());
    if (!f.ok()) return std::move(f).error();
    n.followers.push_back(std::move(*f));
    lo.peers.push_back(n.followers.back()->local_endpoint());
    reads::ReadServerOptions so;
    so.transport = o.transport;
    so.listen = {"127.0.0.1", 0};
    so.pre_shared_key = o.pre_shared_key;
    auto s = Server::create(so, *n.stores.back(), *n.followers.back());
    if (!s.ok()) return std::move(s).error();
    n.client_options.replicas.push_back((*s)->local_endpoint());
    n.servers.push_back(std::move(*s));
  }
  return ok_status();
}

// Remote followers: the leader replicates to o.peers, reads go to o.read_peers, and one
// one-replica client per read peer reads that process's CPU.
Status connect_remote_followers(const RunOptions& o, Nodes& n, replication::ChannelOptions& lo) {
  lo.peers = o.peers;
  lo.connect_timeout = kRemoteConnectTimeout;
  n.client_options.replicas = o.read_peers;
  n.client_options.connect_timeout = kRemoteConnectTimeout;
  n.client_options.request_timeout = kRemoteRequestTimeout;
  for (const auto& peer : o.read_peers) {
    reads::ReadClientOptions po = n.client_options;
    po.replicas = {peer};
    po.node_id = "rdmarepl-ycsb-cpu-probe";
    auto c = reads::ReadClient::connect(po);
    if (!c.ok())
      return Error(Errc::connection_refused,
                   fmt::format("--read-peers {}: {}; is a follower (--role follower) serving "
                               "reads there?",
                               peer.to_string(), c.error().message()));
    n.cpu_probes.push_back(std::move(*c));
  }
  return ok_status();
}

// Waits until every follower has all its shards connected: a follower that connects after
// the retained window moved past seq 1 could not be caught up (there is no log).
Status wait_connected(const Channel& leader, size_t followers, std::chrono::seconds limit) {
  const Deadline deadline = Deadline::after(limit);
  for (;;) {
    const auto m = leader.metrics();
    std::string missing;
    for (size_t i = 0; i < followers; ++i)
      if (!m.follower_connected[i])
        missing += fmt::format("{}{}", missing.empty() ? "" : ", ", i + 1);
    if (missing.empty()) return ok_status();
    if (deadline.expired())
      return Error(Errc::timeout,
                   fmt::format("follower(s) {} of --peers not connected after {} s; check that "
                               "they run with the same --transport, --shards and --psk",
                               missing, limit.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

replication::ChannelOptions node_options(const RunOptions& o) {
  replication::ChannelOptions c;
  c.transport = o.transport;
  c.shards = o.shards;
  c.max_value_bytes = std::max<uint32_t>(o.value_bytes, 1024) + 64;
  c.ring_bytes = 8 << 20;
  c.retain_bytes = 32 << 20;
  c.polling = o.polling;
  c.poll_interval = o.poll_interval;
  c.batch_bytes = o.batch_bytes;
  c.flush_delay = std::chrono::microseconds(50);
  c.pre_shared_key = o.pre_shared_key;
  return c;
}

Result<std::unique_ptr<Nodes>> start_nodes(const RunOptions& o) {
  auto n = std::make_unique<Nodes>();
  n->client_options.transport = o.transport;
  n->client_options.pre_shared_key = o.pre_shared_key;
  n->client_options.max_keys_per_message = o.keys_per_message;
  replication::ChannelOptions lo = node_options(o);
  lo.node_id = "rdmarepl-ycsb-leader";
  lo.tuning.enabled = o.tuning;
  const bool remote = !o.peers.empty();
  RDMAREPL_TRY(remote ? connect_remote_followers(o, *n, lo) : start_local_followers(o, *n, lo));
  auto l = Channel::create(lo, n->leader_store);
  if (!l.ok()) return std::move(l).error();
  n->leader = std::move(*l);
  if (remote) RDMAREPL_TRY(wait_connected(*n->leader, lo.peers.size(), std::chrono::seconds(60)));
  return n;
}

Result<double> Nodes::remote_cpu_seconds() {
  double sum = 0;
  for (size_t i = 0; i < cpu_probes.size(); ++i) {
    auto r = cpu_probes[i]->get(kCpuKey);
    if (!r.ok()) return std::move(r).error();
    auto cpu = r->status == reads::ReadStatus::found ? parse_cpu_value(r->value) : std::nullopt;
    if (!cpu)
      return Error(Errc::protocol_error,
                   fmt::format("read peer {} did not answer its CPU reading ('{}'); is it an "
                               "rdmarepl-ycsb --role follower of this version?",
                               client_options.replicas[i].to_string(), kCpuKey));
    sum += *cpu;
  }
  return sum;
}

void Nodes::close() noexcept {
  for (auto& srv : servers) srv->close();
}

}  // namespace rdmarepl::ycsb
