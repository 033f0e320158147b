// rdmarepl-doctor: runs the operations check-list on this node and prints one PASS / WARN /
// FAIL line per check with what to do (docs/doctor.md). Exit status 1 when a check failed,
// 2 on bad arguments. With --listen it serves write-with-immediate echoes for another node's
// `--peer` check instead.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "host_checks.h"
#include "needs.h"
#include "peer_check.h"
#include "rdma_checks.h"
#include "rdmarepl/core/enum_text.h"

using namespace rdmarepl;
using namespace rdmarepl::doctor;

namespace {

struct Args {
  std::string root = "/";
  std::string role = "leader";
  uint32_t followers = 2;
  replication::ChannelOptions channel;
  std::string peer, listen, transport = "auto", key, key_file;
  uint32_t connections = 0;
  int timeout_ms = 5000;
  bool json = false;
};

void add_channel_flags(CLI::App& app, Args& a) {
  auto* g = "Channel options (defaults: ChannelOptions)";
  app.add_option("--role", a.role, "the role the node's channel plays: leader or follower")
      ->check(CLI::IsMember({"leader", "follower"}))
      ->capture_default_str()
      ->group(g);
  app.add_option("--shards", a.channel.shards, "shards (one queue pair per shard and follower)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--followers", a.followers, "followers a leader replicates to")
      ->capture_default_str()
      ->group(g);
  app.add_option("--ring-bytes", a.channel.ring_bytes, "follower receive ring per shard")
      ->capture_default_str()
      ->group(g);
  app.add_option("--retain-bytes", a.channel.retain_bytes, "leader retained window per shard")
      ->capture_default_str()
      ->group(g);
  app.add_option("--max-value-bytes", a.channel.max_value_bytes, "largest value")
      ->capture_default_str()
      ->group(g);
  app.add_option("--zero-copy-pool-bytes", a.channel.zero_copy_pool_bytes,
                 "leader's registered slab pool")
      ->capture_default_str()
      ->group(g);
  app.add_option("--queue-depth", a.channel.queue_depth, "batches in flight per connection")
      ->capture_default_str()
      ->group(g);
}

void add_peer_flags(CLI::App& app, Args& a) {
  auto* g = "Round trip to a peer";
  app.add_option("--peer", a.peer,
                 "host:port of a follower's channel (a probe: the follower answers without "
                 "touching its store or its leader's session) or of a `rdmarepl-doctor --listen`: "
                 "connect and do a write-with-immediate round trip")
      ->group(g);
  app.add_option("--listen", a.listen,
                 "host:port: serve echoes for other nodes' --peer checks instead of checking")
      ->group(g);
  app.add_option("--connections", a.connections,
                 "with --listen: exit after serving this many connections (0: never)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--transport", a.transport,
                 "auto (verbs when an active device exists), tcp or verbs")
      ->check(CLI::IsMember({"auto", "tcp", "verbs"}))
      ->capture_default_str()
      ->group(g);
  auto* key = app.add_option("--key", a.key,
                             "pre-shared key of the handshake (as ChannelOptions::pre_shared_key)")
                  ->group(g);
  app.add_option("--key-file", a.key_file,
                 "file holding the pre-shared key (trailing newline ignored), as replicated_kv's "
                 "--key-file")
      ->excludes(key)
      ->group(g);
  app.add_option("--timeout-ms", a.timeout_ms, "connect and round-trip timeout")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(g);
}

std::vector<Check> run_checks(const Args& a) {
  replication::ChannelOptions o = a.channel;
  o.role = a.role == "follower" ? replication::Role::follower : replication::Role::leader;
  const ChannelNeeds needs = needs_of(o, a.followers);
  const SysRoot root(a.root);
  auto devices = read_sysfs_devices(root);
  if (a.root == "/") {
    query_verbs(devices, needs.max_inline_data);
  } else {
    for (auto& d : devices)
      d.verbs_error = "not queried: --root names a copy of sysfs, libibverbs sees the real one";
  }
  std::vector<Check> all = rdma_checks(devices, root, needs);
  all.push_back(check_memlock(root, current_memlock_limit(), needs));
  all.push_back(check_hugepages(root, needs));
  all.push_back(check_overcommit(root));
  all.push_back(check_irqbalance(root));
  all.push_back(check_governor(root));
  return all;
}

PeerOptions peer_options(const Args& a) {
  PeerOptions p;
  p.transport = *from_string<transport::TransportKind>(a.transport);
  p.pre_shared_key = a.key;
  p.timeout = std::chrono::milliseconds(a.timeout_ms);
  return p;
}

void print(const std::vector<Check>& checks, bool json) {
  if (!json) {
    for (const auto& c : checks) std::printf("%s\n", format_line(c).c_str());
    return;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : checks)
    out.push_back({{"verdict", to_string(c.verdict)},
                   {"name", c.name},
                   {"detail", c.detail},
                   {"advice", c.advice}});
  std::cout << out.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "rdmarepl-doctor: checks this node for RDMA replication and prints one PASS / WARN / FAIL "
      "line per check with what to do. Exit status 1 when any check fails."};
  add_channel_flags(app, a);
  add_peer_flags(app, a);
  app.add_flag("--json", a.json, "print the checks as a JSON array");
  app.add_option("--root", a.root, "read sysfs and procfs under this directory (a copied tree)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (!a.key_file.empty()) {
    auto key = read_key_file(a.key_file);
    if (!key) {
      std::fprintf(stderr, "rdmarepl-doctor: %s\n", key.error().message().c_str());
      return 2;
    }
    a.key = std::move(key).value();
  }
  if (!a.listen.empty()) {
    auto where = parse_endpoint(a.listen);
    Status st = where ? run_echo_listener(*where, peer_options(a), a.connections)
                      : Status(std::move(where).error());
    if (!st) std::fprintf(stderr, "rdmarepl-doctor: %s\n", st.error().message().c_str());
    return st ? 0 : 1;
  }
  std::vector<Check> checks = run_checks(a);
  if (!a.peer.empty()) {
    auto where = parse_endpoint(a.peer);
    checks.push_back(where ? check_peer(*where, peer_options(a))
                           : Check{Verdict::fail, "peer " + a.peer, where.error().message(),
                                   "pass --peer host:port"});
  }
  print(checks, a.json);
  return any_failed(checks) ? 1 : 0;
}
