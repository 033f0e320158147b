// rdmarepl-ycsb --role follower (follower_node.h).
#include "follower_node.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstdio>

#include "nodes.h"

namespace rdmarepl::ycsb {

int run_follower(const RunOptions& o, const FollowerRole& role) {
  // Blocked before any thread starts, so that every thread inherits the mask and the
  // signals wait for sigwait() below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Store store;
  replication::ChannelOptions fo = node_options(o);
  fo.role = replication::Role::follower;
  fo.node_id = "rdmarepl-ycsb-follower";
  fo.listen = {role.listen, role.port};
  fo.connect_timeout = kRemoteConnectTimeout;
  auto channel = Channel::create(fo, store);
  if (!channel.ok()) {
    fmt::print(stderr, "rdmarepl-ycsb follower: {}\n", channel.error().to_string());
    return 1;
  }
  reads::ReadServerOptions so;
  so.transport = o.transport;
  so.listen = {role.listen, role.read_port};
  so.pre_shared_key = o.pre_shared_key;
  so.allow_unauthenticated = fo.allow_unauthenticated;
  so.node_id = "rdmarepl-ycsb-follower";
  so.connect_timeout = kRemoteConnectTimeout;
  auto server = Server::create(so, store, **channel);
  if (!server.ok()) {
    fmt::print(stderr, "rdmarepl-ycsb follower: read server: {}\n", server.error().to_string());
    return 1;
  }
  fmt::print("READY replication={} reads={} transport={}\n",
             (*channel)->local_endpoint().to_string(), (*server)->local_endpoint().to_string(),
             (*channel)->transport_name());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop, &sig);
  (*server)->close();
  const auto st = (*server)->stats();
  uint64_t applied = 0;
  for (uint32_t s = 0; s < fo.shards; ++s) applied += (*channel)->applied_seq(s);
  (*channel)->close();
  fmt::print(
      "STOPPED cpu_seconds={:.3f} applied={} read_requests={} read_keys={} bad_requests={}\n",
      process_cpu_seconds(), applied, st.requests, st.keys, st.bad_requests);
  std::fflush(stdout);
  return 0;
}

}  // namespace rdmarepl::ycsb
