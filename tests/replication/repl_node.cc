// A replication node process for the integration tests and the multi-VM test.
//
// Follower (default): a MapStore behind a follower channel. Prints "PORT <n>" once
// listening, then answers commands on stdin:
//   digest  -> "DIGEST <digest> <records applied> <sum of applied seqs>"
//   quit    -> exits (so does EOF)
// With --until-seqs N it reads no stdin: it waits until the applied seqs of all shards sum
// to N, prints the DIGEST line and exits (status 1 when --wait-s seconds pass first).
//
// Leader (--role leader): connects to --peers host:port[,host:port...], writes --records
// records (a deterministic workload of --seed: puts of 16-1024 byte values over a key space
// of --records / 3 keys, every 16th write an erase), waits until every follower acknowledged
// all of them, prints "DIGEST ..." of its own store and exits (status 1 on a failure).
//
// Usage: repl_node [--role follower|leader] [--transport tcp|verbs|auto] [--listen ADDR]
//                  [--port N] [--shards N] [--ring BYTES] [--max-value BYTES] [--queue N]
//                  [--psk KEY] [--until-seqs N] [--wait-s N]
//                  [--peers LIST] [--records N] [--seed N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "rdmarepl/rdmarepl.h"
#include "test_store.h"

namespace {

using Channel = rdmarepl::ReplicationChannel<rdmarepl::test::MapStore>;

void print_digest(const rdmarepl::test::MapStore& store, uint64_t seqs) {
  std::printf("DIGEST %llu %llu %llu\n", static_cast<unsigned long long>(store.digest()),
              static_cast<unsigned long long>(store.applied_count()),
              static_cast<unsigned long long>(seqs));
  std::fflush(stdout);
}

uint64_t applied_seqs(Channel& ch, uint32_t shards) {
  uint64_t seqs = 0;
  for (uint32_t s = 0; s < shards; ++s) seqs += ch.applied_seq(s);
  return seqs;
}

int run_leader(const rdmarepl::ChannelOptions& o, uint64_t records, uint64_t seed) {
  rdmarepl::test::MapStore store;
  auto ch = Channel::create(o, store);
  if (!ch.ok()) {
    std::fprintf(stderr, "repl_node: %s\n", ch.error().to_string().c_str());
    return 1;
  }
  std::mt19937_64 rng(seed);
  const uint64_t keys = records / 3 + 1;
  std::string value;
  for (uint64_t i = 0; i < records; ++i) {
    const std::string key = "k" + std::to_string(rng() % keys);
    rdmarepl::WriteResult w;
    if (i % 16 == 15) {
      store.erase(key);
      w = (*ch)->erase(key);
    } else {
      value.assign(16 + rng() % 1009, static_cast<char>('a' + rng() % 26));
      store.put(key, value);
      w = (*ch)->replicate(key, value);
    }
    if (!w.ok()) {
      std::fprintf(stderr, "repl_node: write %llu failed (status %d)\n",
                   static_cast<unsigned long long>(i), static_cast<int>(w.status));
      return 1;
    }
  }
  auto st = (*ch)->wait_all_acked(std::chrono::seconds(120));
  if (!st.ok()) {
    std::fprintf(stderr, "repl_node: %s\n", st.error().message().c_str());
    return 1;
  }
  uint64_t seqs = 0;
  for (uint32_t s = 0; s < o.shards; ++s) seqs += (*ch)->last_seq(s);
  print_digest(store, seqs);
  (*ch)->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rdmarepl::ChannelOptions o;
  o.role = rdmarepl::Role::follower;
  o.transport = rdmarepl::TransportKind::tcp;
  o.listen = {"127.0.0.1", 0};
  o.node_id = "repl_node";
  o.polling = rdmarepl::PollingMode::sleep;
  o.poll_interval = std::chrono::microseconds(20);
  uint64_t until_seqs = 0, wait_s = 120, records = 10000, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string arg = argv[i + 1];
    const unsigned long long v = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--port")
      o.listen.port = static_cast<uint16_t>(v);
    else if (flag == "--listen")
      o.listen.host = arg;
    else if (flag == "--role" && (arg == "leader" || arg == "follower"))
      o.role = arg == "leader" ? rdmarepl::Role::leader : rdmarepl::Role::follower;
    else if (flag == "--transport" && arg == "tcp")
      o.transport = rdmarepl::TransportKind::tcp;
    else if (flag == "--transport" && arg == "verbs")
      o.transport = rdmarepl::TransportKind::verbs;
    else if (flag == "--transport" && arg == "auto")
      o.transport = rdmarepl::TransportKind::automatic;
    else if (flag == "--shards")
      o.shards = static_cast<uint32_t>(v);
    else if (flag == "--ring")
      o.ring_bytes = v;
    else if (flag == "--max-value")
      o.max_value_bytes = v;
    else if (flag == "--queue")
      o.queue_depth = static_cast<uint32_t>(v);
    else if (flag == "--psk")
      o.pre_shared_key = arg;
    else if (flag == "--until-seqs")
      until_seqs = v;
    else if (flag == "--wait-s")
      wait_s = v;
    else if (flag == "--records")
      records = v;
    else if (flag == "--seed")
      seed = v;
    else if (flag == "--peers") {
      for (size_t pos = 0; pos < arg.size();) {
        size_t end = arg.find(',', pos);
        if (end == std::string::npos) end = arg.size();
        const std::string item = arg.substr(pos, end - pos);
        const size_t colon = item.rfind(':');
        if (colon == std::string::npos) {
          std::fprintf(stderr, "repl_node: --peers wants host:port[,host:port...]\n");
          return 2;
        }
        o.peers.push_back(
            {item.substr(0, colon), static_cast<uint16_t>(std::stoul(item.substr(colon + 1)))});
        pos = end + 1;
      }
    } else {
      std::fprintf(stderr, "repl_node: unknown flag or value %s %s\n", flag.c_str(), arg.c_str());
      return 2;
    }
  }
  if (o.role == rdmarepl::Role::leader) {
    o.node_id = "repl_node-leader";
    o.polling = rdmarepl::PollingMode::busy;
    return run_leader(o, records, seed);
  }
  rdmarepl::test::MapStore store;
  auto ch = Channel::create(o, store);
  if (!ch.ok()) {
    std::fprintf(stderr, "repl_node: %s\n", ch.error().to_string().c_str());
    return 1;
  }
  std::printf("PORT %u\n", static_cast<unsigned>((*ch)->local_endpoint().port));
  std::fflush(stdout);
  if (until_seqs != 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    while (applied_seqs(**ch, o.shards) < until_seqs) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "repl_node: applied %llu of %llu seqs in %llu s\n",
                     static_cast<unsigned long long>(applied_seqs(**ch, o.shards)),
                     static_cast<unsigned long long>(until_seqs),
                     static_cast<unsigned long long>(wait_s));
        print_digest(store, applied_seqs(**ch, o.shards));
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    print_digest(store, applied_seqs(**ch, o.shards));
    (*ch)->close();
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "digest") {
      print_digest(store, applied_seqs(**ch, o.shards));
    } else if (line == "quit") {
      break;
    }
  }
  (*ch)->close();
  return 0;
}
