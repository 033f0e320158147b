// One node of the crash test: a MapStore behind a replication channel over TCP with a
// write-ahead log (durability=batch). The harness (crash_test.cc) kills it with SIGKILL at
// random moments and starts it again over the same log.
//
//   crash_node follower --port P --wal DIR
//       prints "READY <port>" once listening (after recovering from DIR)
//   crash_node leader --peers P1,P2 --wal DIR --base N
//       ack_mode=all; writes key "w<id>" = "v<id>" for id = N, N+1, ... at a steady rate
//       and prints "ACK <id>" (flushed) for each write once it is committed: the harness
//       keeps the acknowledged ids, outside this process
//
// Commands on stdin (a thread of their own; the leader keeps writing meanwhile):
//   stop          leader: stop writing, wait until every follower acknowledged everything,
//                 print "QUIESCED" (or "QUIESCE-FAILED <why>")
//   check FILE    print "PRESENT <n> <missing>": how many ids listed in FILE (one per line)
//                 have key w<id> = v<id> in the store, and the first missing one (or -)
//   digest        print "DIGEST <digest> <size>"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "rdmarepl/rdmarepl.h"
#include "replication/test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;

namespace {

std::mutex g_out_mu;

template <class... A>
void say(const char* fmt, A... a) {
  std::lock_guard lock(g_out_mu);
  std::printf(fmt, a...);
  std::fflush(stdout);
}

bool expected_value(const test::MapStore& store, const std::string& id) {
  std::lock_guard lock(store.mu);
  auto it = store.data.find("w" + id);
  return it != store.data.end() && it->second == "v" + id;
}

void check(const test::MapStore& store, const std::string& path) {
  std::ifstream in(path);
  std::string id, missing = "-";
  uint64_t present = 0;
  while (std::getline(in, id)) {
    if (id.empty()) continue;
    if (expected_value(store, id))
      ++present;
    else if (missing == "-")
      missing = id;
  }
  say("PRESENT %llu %s\n", static_cast<unsigned long long>(present), missing.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: crash_node leader|follower [--port P] [--peers P1,P2] --wal DIR "
                 "[--base N]\n");
    return 2;
  }
  const std::string role = argv[1];
  ChannelOptions o;
  o.transport = TransportKind::tcp;
  o.shards = 2;
  o.ring_bytes = 1 << 20;
  o.retain_bytes = 16 << 20;
  o.max_value_bytes = 64 * 1024;
  o.batch_bytes = 16 * 1024;
  o.queue_depth = 64;
  o.polling = PollingMode::sleep;
  o.poll_interval = 100us;
  o.reconnect_interval = 50ms;
  o.connect_timeout = 1000ms;
  o.ack_mode = AckMode::all;
  o.durability = replication::Durability::batch;
  o.wal_segment_bytes = 1 << 20;
  uint64_t base = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--port") {
      o.listen = {"127.0.0.1", static_cast<uint16_t>(std::stoul(v))};
    } else if (flag == "--wal") {
      o.wal_dir = v;
    } else if (flag == "--base") {
      base = std::stoull(v);
    } else if (flag == "--peers") {
      size_t pos = 0;
      while (pos <= v.size()) {
        const size_t comma = v.find(',', pos);
        const std::string p =
            v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        o.peers.push_back({"127.0.0.1", static_cast<uint16_t>(std::stoul(p))});
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else {
      std::fprintf(stderr, "crash_node: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  test::MapStore store;
  if (role == "follower") {
    o.role = Role::follower;
    o.node_id = "crash-follower";
    // Followers checkpoint often, so restarts recover from checkpoint + log.
    o.checkpoint_every_bytes = 256 * 1024;
  } else {
    o.role = Role::leader;
    o.node_id = "crash-leader";
  }
  auto ch = ReplicationChannel<test::MapStore>::create(o, store);
  if (!ch.ok()) {
    std::fprintf(stderr, "crash_node %s: %s\n", role.c_str(), ch.error().to_string().c_str());
    return 1;
  }
  auto& channel = **ch;
  std::atomic<bool> stop_writing{false};
  std::atomic<bool> writer_done{false};
  std::atomic<bool> quit{false};
  std::thread writer;
  if (o.role == Role::leader) {
    say("READY 0\n");
    writer = std::thread([&] {
      struct Pending {
        Ticket ticket;
        uint64_t id;
      };
      std::deque<Pending> pending;
      uint64_t id = base;
      while ((!stop_writing.load() || !pending.empty()) && !quit.load()) {
        if (!stop_writing.load() && pending.size() < 64) {
          const std::string key = "w" + std::to_string(id), value = "v" + std::to_string(id);
          auto w = channel.replicate(key, value);
          if (w.ok()) {
            store.put(key, value);
            pending.push_back({w.ticket, id});
            ++id;
          }
        }
        // Shards commit independently: report every committed write, in any order.
        bool progressed = false;
        for (auto it = pending.begin(); it != pending.end();) {
          if (channel.committed(it->ticket)) {
            say("ACK %llu\n", static_cast<unsigned long long>(it->id));
            it = pending.erase(it);
            progressed = true;
          } else {
            ++it;
          }
        }
        if (stop_writing.load() && !pending.empty() && !progressed) channel.flush();
        if (!progressed) std::this_thread::sleep_for(300us);
      }
      writer_done = true;
    });
  } else {
    say("READY %u\n", static_cast<unsigned>(channel.local_endpoint().port));
  }

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "stop") {
      stop_writing = true;
      while (!writer_done.load()) std::this_thread::sleep_for(1ms);
      auto st = channel.wait_all_acked(60s);
      if (st.ok())
        say("QUIESCED\n");
      else
        say("QUIESCE-FAILED %s\n", st.error().message().c_str());
    } else if (line.rfind("check ", 0) == 0) {
      check(store, line.substr(6));
    } else if (line == "digest") {
      say("DIGEST %llu %llu\n", static_cast<unsigned long long>(store.digest()),
          static_cast<unsigned long long>(store.size()));
    } else if (line == "quit") {
      break;
    }
  }
  stop_writing = true;
  quit = true;
  if (writer.joinable()) writer.join();
  channel.close();
  return 0;
}
