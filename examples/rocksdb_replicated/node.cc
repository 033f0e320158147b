// rocksdb_node: one node of a replicated RocksDB (examples/rocksdb_replicated/README in
// docs/embedding.md). Roles:
//   rocksdb_node follower --db DIR --port P [--crash-after-seq N]
//   rocksdb_node leader   --db DIR --wal DIR --peer 127.0.0.1:P ... --writes N [--seed S]
//   rocksdb_node scan     --db DIR        (digest of every key, invariant, exactly-once check)
// The leader applies a write to its own database once the followers have it (ack=all), with
// the write's seq as its position; on restart its write-ahead log brings the database up to
// date. Followers resume from the position in their databases.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>

#include <unistd.h>

#include "rdmarepl/core/crc32c.h"
#include "rocksdb_store.h"
#include "workload.h"

using namespace std::chrono_literals;
using rocksrepl::RocksDbStore;
using Channel = rdmarepl::ReplicationChannel<RocksDbStore>;

namespace {

constexpr uint32_t kShards = 1;  // every key may join a group (docs/embedding.md)

rdmarepl::ChannelOptions common_options() {
  rdmarepl::ChannelOptions o;
  o.shards = kShards;
  o.transport = rdmarepl::TransportKind::tcp;
  o.polling = rdmarepl::PollingMode::blocking;  // three processes share few cores
  o.poll_interval = 200us;
  o.reconnect_interval = 50ms;
  o.reconnect_max_interval = 500ms;
  o.ring_bytes = 8 << 20;
  o.retain_bytes = 64 << 20;
  o.max_value_bytes = 1 << 20;
  return o;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "rocksdb_node: %s\n", what.c_str());
  return 1;
}

std::unique_ptr<RocksDbStore> open_store(const std::string& path) {
  auto s = RocksDbStore::open(path, kShards);
  if (!s) {
    std::fprintf(stderr, "rocksdb_node: %s\n", s.error().message().c_str());
    std::exit(1);
  }
  return std::move(s).value();
}

// Blocks until SIGTERM or SIGINT.
void wait_for_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
}

int run_follower(const std::string& db, uint16_t port, uint64_t crash_after) {
  sigset_t set;  // the signals go to sigwait, not to any thread
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto store = open_store(db);
  if (crash_after != 0) store->crash_after(crash_after);
  auto o = common_options();
  o.role = rdmarepl::Role::follower;
  o.node_id = "follower-" + std::to_string(port);
  o.listen = {"127.0.0.1", port};
  auto ch = Channel::create(o, *store);
  if (!ch) return fail(ch.error().message());
  std::printf("follower %u: resuming after seq %llu\n", port,
              static_cast<unsigned long long>((*ch)->applied_seq(0)));
  std::fflush(stdout);
  // A reader checking the batch invariant on RocksDB snapshots while batches are applied.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0}, broken{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const std::string bad = rocksrepl::check_pairs(store->db());
      if (!bad.empty()) {
        ++broken;
        std::fprintf(stderr, "follower %u: INVARIANT BROKEN: %s\n", port, bad.c_str());
      }
      ++checks;
      std::this_thread::sleep_for(1ms);
    }
  });
  wait_for_signal();
  stop = true;
  reader.join();
  (*ch)->close();
  std::printf("follower %u: applied up to seq %llu; reader: %llu snapshot checks, %llu broken\n",
              port, static_cast<unsigned long long>((*ch)->applied_seq(0)),
              static_cast<unsigned long long>(checks.load()),
              static_cast<unsigned long long>(broken.load()));
  return broken.load() == 0 ? 0 : 3;
}

// Waits until `t` committed (ack=all: both followers applied it), however long a follower is
// away.
void wait_committed(Channel& ch, rdmarepl::Ticket t) {
  for (;;) {
    auto st = ch.wait(t, 5s);
    if (st) return;
    std::fprintf(stderr, "leader: still waiting for seq %llu: %s\n",
                 static_cast<unsigned long long>(t.seq), st.error().message().c_str());
  }
}

int run_leader(const std::string& db, const std::string& wal, const std::vector<std::string>& peers,
               uint64_t writes, uint64_t seed, uint64_t crash_after_writes) {
  auto store = open_store(db);
  const uint64_t db_seq = store->durable_seq(0);
  auto o = common_options();
  o.role = rdmarepl::Role::leader;
  o.node_id = "leader";
  o.wal_dir = wal;
  o.durability = rdmarepl::replication::Durability::none;  // as RocksDB's WAL without sync
  o.ack_mode = rdmarepl::AckMode::all;
  for (const auto& p : peers) {
    const auto colon = p.rfind(':');
    o.peers.push_back({p.substr(0, colon), static_cast<uint16_t>(std::stoi(p.substr(colon + 1)))});
  }
  auto ch = Channel::create(o, *store);  // recovery: the log's records after the db's position
  if (!ch) return fail(ch.error().message());
  Channel& c = **ch;
  std::printf("leader: database at seq %llu, log at seq %llu: recovery applied %llu records\n",
              static_cast<unsigned long long>(db_seq),
              static_cast<unsigned long long>(c.last_seq(0)),
              static_cast<unsigned long long>(store->durable_seq(0) - db_seq));
  std::fflush(stdout);
  rocksrepl::Workload load(seed, 100, 16);
  std::deque<std::pair<rocksrepl::Write, rdmarepl::Ticket>> pending;  // sent, not yet applied
  uint64_t done = 0;
  auto apply_pending = [&] {
    if (pending.empty()) return;
    wait_committed(c, pending.back().second);  // one shard: commits are in seq order
    if (crash_after_writes != 0 && done >= crash_after_writes) {
      // Committed to the followers and in the log, not yet in this database.
      std::printf("leader: crashing with %zu committed writes not applied locally\n",
                  pending.size());
      std::fflush(stdout);
      ::kill(::getpid(), SIGKILL);
    }
    for (auto& [w, t] : pending) store->apply_committed(w.ops, t);
    pending.clear();
  };
  for (uint64_t i = 0; i < writes; ++i) {
    rocksrepl::Write w;
    load.next(w);
    auto r = rocksrepl::replicate(c, w);
    if (!r.ok()) return fail(fmt::format("write {}: {}", i, describe(r.status)));
    pending.emplace_back(std::move(w), r.ticket);
    ++done;
    if (pending.size() == 32) apply_pending();
  }
  c.flush();
  apply_pending();
  if (auto st = c.wait_all_acked(60s); !st) return fail(st.error().message());
  std::printf("leader: %llu writes done, last seq %llu\n", static_cast<unsigned long long>(writes),
              static_cast<unsigned long long>(c.last_seq(0)));
  return 0;
}

// Prints a digest of every key and value (metadata included), the invariant, and per shard
// the position and the count of applied records (equal: each record applied exactly once).
int run_scan(const std::string& db) {
  auto store = open_store(db);
  std::unique_ptr<rocksdb::Iterator> it(store->db().NewIterator(rocksdb::ReadOptions()));
  uint32_t crc = 0;
  uint64_t keys = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++keys) {
    const uint64_t lens[2] = {it->key().size(), it->value().size()};
    crc = rdmarepl::crc32c::extend(crc, lens, sizeof lens);
    crc = rdmarepl::crc32c::extend(crc, it->key().data(), it->key().size());
    crc = rdmarepl::crc32c::extend(crc, it->value().data(), it->value().size());
  }
  it.reset();
  const std::string bad = rocksrepl::check_pairs(store->db());
  int rc = bad.empty() ? 0 : 3;
  std::printf("digest %08x keys %llu invariant %s", crc, static_cast<unsigned long long>(keys),
              bad.empty() ? "ok" : bad.c_str());
  for (uint32_t s = 0; s < kShards; ++s) {
    const uint64_t pos = store->durable_seq(s), n = store->applied_count(s);
    std::printf(" shard %u pos %llu applied %llu", s, static_cast<unsigned long long>(pos),
                static_cast<unsigned long long>(n));
    if (pos != n) rc = 4;
  }
  std::printf("\n");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rocksdb_node: one node of a replicated RocksDB (rdmarepl example)"};
  app.require_subcommand(1);
  std::string db, wal;
  uint16_t port = 0;
  uint64_t crash_after = 0, writes = 1000, seed = 1, crash_after_writes = 0;
  std::vector<std::string> peers;
  auto* f = app.add_subcommand("follower", "serve as a follower until SIGTERM");
  f->add_option("--db", db, "RocksDB directory")->required();
  f->add_option("--port", port, "TCP port on 127.0.0.1")->required();
  f->add_option("--crash-after-seq", crash_after,
                "kill this process (SIGKILL) right after the database write that reaches this "
                "seq, before it is acknowledged (exactly-once test)");
  auto* l = app.add_subcommand("leader", "write a workload, replicated with ack=all");
  l->add_option("--db", db, "RocksDB directory")->required();
  l->add_option("--wal", wal, "the channel's write-ahead log directory")->required();
  l->add_option("--peer", peers, "follower host:port (repeat)")->required();
  l->add_option("--writes", writes, "writes to issue (single ops and batches)");
  l->add_option("--seed", seed, "workload seed");
  l->add_option("--crash-after-writes", crash_after_writes,
                "kill this process (SIGKILL) once this many writes committed, before applying "
                "the last of them to the local database (recovery test)");
  auto* s = app.add_subcommand("scan", "print a digest of the database and check it");
  s->add_option("--db", db, "RocksDB directory")->required();
  CLI11_PARSE(app, argc, argv);
  if (f->parsed()) return run_follower(db, port, crash_after);
  if (l->parsed()) return run_leader(db, wal, peers, writes, seed, crash_after_writes);
  return run_scan(db);
}
