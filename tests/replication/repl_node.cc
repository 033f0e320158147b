// A follower process for the integration tests: a MapStore behind a follower channel on
// the TCP transport. Prints "PORT <n>" once listening, then answers commands on stdin:
//   digest  -> "DIGEST <digest> <records applied> <sum of applied seqs>"
//   quit    -> exits (so does EOF)
// Usage: repl_node [--port N] [--shards N] [--ring BYTES] [--max-value BYTES] [--queue N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "rdmarepl/rdmarepl.h"
#include "test_store.h"

int main(int argc, char** argv) {
  rdmarepl::ChannelOptions o;
  o.role = rdmarepl::Role::follower;
  o.transport = rdmarepl::TransportKind::tcp;
  o.listen = {"127.0.0.1", 0};
  o.node_id = "repl_node";
  o.polling = rdmarepl::PollingMode::sleep;
  o.poll_interval = std::chrono::microseconds(20);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const unsigned long long v = std::strtoull(argv[i + 1], nullptr, 10);
    if (flag == "--port")
      o.listen.port = static_cast<uint16_t>(v);
    else if (flag == "--shards")
      o.shards = static_cast<uint32_t>(v);
    else if (flag == "--ring")
      o.ring_bytes = v;
    else if (flag == "--max-value")
      o.max_value_bytes = v;
    else if (flag == "--queue")
      o.queue_depth = static_cast<uint32_t>(v);
    else if (flag == "--psk")
      o.pre_shared_key = argv[i + 1];
    else {
      std::fprintf(stderr, "repl_node: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  rdmarepl::test::MapStore store;
  auto ch = rdmarepl::ReplicationChannel<rdmarepl::test::MapStore>::create(o, store);
  if (!ch.ok()) {
    std::fprintf(stderr, "repl_node: %s\n", ch.error().to_string().c_str());
    return 1;
  }
  std::printf("PORT %u\n", static_cast<unsigned>((*ch)->local_endpoint().port));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "digest") {
      uint64_t seqs = 0;
      for (uint32_t s = 0; s < o.shards; ++s) seqs += (*ch)->applied_seq(s);
      std::printf("DIGEST %llu %llu %llu\n", static_cast<unsigned long long>(store.digest()),
                  static_cast<unsigned long long>(store.applied_count()),
                  static_cast<unsigned long long>(seqs));
      std::fflush(stdout);
    } else if (line == "quit") {
      break;
    }
  }
  (*ch)->close();
  return 0;
}
