// rdmarepl-ycsb: YCSB core workloads (A, B, C, D, F) against replicas that serve reads.
// Updates and inserts go through the leader's replicate() (latency: until every follower
// applied them), reads through ReadClients to the followers. Prints YCSB-style lines and,
// with --json, a JSON array. docs/benchmarks.md ("YCSB") has the commands and results.
//
// Roles:
//   local     (default) the leader, the followers and the clients in this process, on
//             loopback
//   follower  one follower and its read server, until SIGTERM (follower_node.h)
//   client    the leader and the clients; the followers are --peers (replication) and
//             --read-peers (reads), started with --role follower
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "follower_node.h"
#include "rdmarepl/core/enum_text.h"
#include "report.h"
#include "ycsb_run.h"

using namespace rdmarepl;
using namespace rdmarepl::ycsb;

namespace {

// "host:port[,host:port...]"; empty on a malformed list (the caller says what is wrong).
std::vector<transport::Endpoint> parse_endpoints(const std::string& text) {
  std::vector<transport::Endpoint> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) return {};
    const std::string port = item.substr(colon + 1);
    if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5) return {};
    const unsigned long p = std::stoul(port);
    if (p == 0 || p > 65535) return {};
    out.push_back({item.substr(0, colon), static_cast<uint16_t>(p)});
    pos = end + 1;
  }
  return out;
}

int run_workloads(RunOptions& o, const std::string& workloads, const std::string& dist,
                  const std::string& transport, const std::string& json_out, bool strict) {
  Json all = Json::array();
  bool verified = true;
  uint64_t failed = 0;
  for (char w : workloads) {
    if (!core_workload(static_cast<char>(std::toupper(w)), o.mix)) {
      fmt::print(stderr, "rdmarepl-ycsb: unknown workload '{}'; use A, B, C, D or F\n", w);
      return 2;
    }
    if (dist == "uniform") o.mix.distribution = Distribution::uniform;
    if (dist == "zipfian") o.mix.distribution = Distribution::zipfian;
    if (dist == "latest") o.mix.distribution = Distribution::latest;
    auto r = run(o);
    if (!r.ok()) {
      fmt::print(stderr, "rdmarepl-ycsb: workload {}: {}\n", w, r.error().message());
      return 1;
    }
    Json j = report(o, *r, transport);
    print(j);
    verified = verified && r->verified();
    for (const auto& [_, st] : r->ops) failed += st.failed;
    all.push_back(j);
  }
  if (!json_out.empty()) std::ofstream(json_out) << all.dump(2) << "\n";
  if (!verified) return 3;
  if (strict && failed > 0) {
    fmt::print(stderr, "rdmarepl-ycsb: {} operations failed (--strict); see [*], Failed above\n",
               failed);
    return 4;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmarepl-ycsb: YCSB core workloads against rdmarepl replicas serving reads"};
  RunOptions o;
  std::string workloads = "C", transport = "tcp", consistency = "any", json_out, dist;
  std::string role = "local", peers, read_peers;
  FollowerRole follower;
  app.add_option("--role", role,
                 "local (every node in this process), follower (one follower serving reads, "
                 "until SIGTERM) or client (leader and clients; followers at --peers)")
      ->check(CLI::IsMember({"local", "follower", "client"}));
  app.add_option("--workload", workloads, "workload letters to run in turn: A B C D F (e.g. AC)");
  app.add_option("--recordcount", o.record_count, "records loaded before the run");
  app.add_option("--operationcount", o.operation_count, "operations of each workload");
  app.add_option("--value", o.value_bytes,
                 "value bytes (e.g. 1024, 4096, 16384); a follower accepts values up to this");
  app.add_option("--threads", o.threads, "client threads")->check(CLI::Range(1u, 256u));
  app.add_option("--clients", o.clients,
                 "ReadClients the threads share (1: every thread's gets are coalesced)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--inflight", o.inflight,
                 "operations in flight per thread (more than 1: each thread is an event loop "
                 "over a ReadClient of its own, as redis-benchmark's connections per process)")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--keys-per-message", o.keys_per_message,
                 "most gets a read request carries (ReadClientOptions::max_keys_per_message)")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--target", o.target_ops, "target operations per second (0: unthrottled)");
  app.add_option("--followers", o.followers, "in-process followers serving reads (--role local)")
      ->check(CLI::Range(1u, 8u));
  app.add_option("--transport", transport, "tcp or verbs")->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_option("--consistency", consistency, "any, at_least (own writes) or leader")
      ->check(CLI::IsMember({"any", "at_least"}));
  app.add_option("--distribution", dist, "override: zipfian, uniform or latest")
      ->check(CLI::IsMember({"zipfian", "uniform", "latest"}));
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--shards", o.shards, "shards of the channel (every node the same)")
      ->check(CLI::Range(1u, 64u));
  std::string polling = "blocking";
  app.add_option("--polling", polling,
                 "how the channels' pollers wait: busy, sleep (every 20 us) or blocking (in the "
                 "transport; default)")
      ->check(CLI::IsMember({"busy", "sleep", "blocking"}));
  uint32_t poll_interval_us = 20;
  app.add_option("--poll-interval-us", poll_interval_us,
                 "the channels' idle poller round: sleep (sleep) or longest wait (blocking)")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--batch-bytes", o.batch_bytes,
                 "the channels' batch_bytes: the size at which the leader seals a batch, sent "
                 "to each follower as one write (default 65536)")
      ->check(CLI::Range(size_t{1024}, size_t{16} << 20));
  app.add_flag("--tuning", o.tuning,
               "the leader channel's tuner on (the default XGBoost model); the read path has "
               "no tuner");
  app.add_option("--psk", o.pre_shared_key,
                 "pre-shared key of every node and read connection (needed to listen on an "
                 "address other than loopback)");
  app.add_option("--listen", follower.listen, "follower: the address to listen on");
  app.add_option("--port", follower.port, "follower: replication port (0: any free one)");
  app.add_option("--read-port", follower.read_port, "follower: read server port (0: any)");
  app.add_option("--peers", peers, "client: the followers' replication host:port,...");
  app.add_option("--read-peers", read_peers,
                 "client: the followers' read servers host:port,..., in the order of --peers");
  bool strict = false;
  app.add_flag("--strict", strict,
               "exit with status 4 when any operation failed (an error, or an at_least read "
               "answered behind); without it only unverified reads fail the run (status 3)");
  app.add_option("--json", json_out, "also write the results as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);
  o.polling = *from_string<replication::PollingMode>(polling);
  o.poll_interval = std::chrono::microseconds(poll_interval_us);
  o.transport =
      transport == "verbs" ? transport::TransportKind::verbs : transport::TransportKind::tcp;
  o.consistency = consistency == "at_least" ? reads::Consistency::Kind::at_least
                                            : reads::Consistency::Kind::any;
  if (role == "follower") return run_follower(o, follower);
  if (role == "client") {
    o.peers = parse_endpoints(peers);
    o.read_peers = parse_endpoints(read_peers);
    if (o.peers.empty() || o.read_peers.size() != o.peers.size()) {
      fmt::print(stderr,
                 "rdmarepl-ycsb: --role client needs --peers and --read-peers, each a list "
                 "host:port[,host:port...] with one entry per follower (got '{}' and '{}')\n",
                 peers, read_peers);
      return 2;
    }
    // Each run loads its records through a new leader, which would refuse followers that
    // already hold the writes of an earlier run (seqs it does not have).
    if (workloads.size() != 1) {
      fmt::print(stderr,
                 "rdmarepl-ycsb: --role client runs one workload (got '{}'); start fresh "
                 "followers for each workload\n",
                 workloads);
      return 2;
    }
  } else if (!peers.empty() || !read_peers.empty()) {
    fmt::print(stderr, "rdmarepl-ycsb: --peers and --read-peers need --role client\n");
    return 2;
  }
  return run_workloads(o, workloads, dist, transport, json_out, strict);
}
