// A checkpoint shipped to a store with restore() by someone other than its leader
// (docs/security.md): a forged leader whose own log no longer reaches the follower's next
// seq, so that it starts with a checkpoint; and a man in the middle who changes a chunk of a
// real leader's checkpoint and fixes up its CRCs. Over real TCP sockets on 127.0.0.1. Each
// checks what the follower's store holds afterwards and that the log names the attack.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "log_capture.h"
#include "open_channel.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "tamper_proxy.h"
#include "test_store.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LogCapture;
using test::MapStore;
using test::open;
using test::TamperProxy;
using wal::test::TempDir;

namespace {

using Channel = ReplicationChannel<MapStore>;

// One shard over TCP; with a log, a checkpoint every 256 KiB in 1 MiB segments, so that a
// few MiB of writes delete the log's first segment (docs/replication.md, "Durability").
ChannelOptions base(Role role, std::string node, const std::string& key) {
  ChannelOptions o;
  o.role = role;
  o.node_id = std::move(node);
  o.transport = TransportKind::tcp;
  o.pre_shared_key = key;
  o.shards = 1;
  o.ring_bytes = 1 << 20;
  o.batch_bytes = 64 * 1024;
  o.max_value_bytes = 4096;
  o.retain_bytes = 512 * 1024;
  o.ack_mode = AckMode::one;
  o.reconnect_interval = 20ms;
  o.reconnect_max_interval = 200ms;
  return o;
}

ChannelOptions follower_options(const std::string& key, uint16_t port = 0) {
  auto o = base(Role::follower, "follower", key);
  o.listen = {"127.0.0.1", port};
  return o;
}

ChannelOptions leader_options(std::string node, const std::string& key, uint16_t port,
                              uint64_t epoch, const std::string& wal = {}) {
  auto o = base(Role::leader, std::move(node), key);
  o.peers = {{"127.0.0.1", port}};
  o.leader_epoch = epoch;
  if (!wal.empty()) {
    o.wal_dir = wal;
    o.durability = replication::Durability::batch;
    o.wal_segment_bytes = 1 << 20;
    o.checkpoint_every_bytes = 256 * 1024;
  }
  return o;
}

template <typename Pred>
bool eventually(Pred pred, Duration limit = 20s) {
  const Deadline d = Deadline::after(limit);
  while (!pred()) {
    if (d.expired()) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Writes `n` records "<prefix><i>" of `bytes` bytes over 500 keys (into `store` first, as the
// application does) and waits until they are acknowledged.
void write_acked(Channel& leader, MapStore& store, const std::string& prefix, int n,
                 size_t bytes = 32) {
  for (int i = 0; i < n; ++i) {
    const std::string key = prefix + std::to_string(i % 500);
    const std::string value = std::string(bytes, 'v') + std::to_string(i);
    store.put(key, value);
    REQUIRE(leader.replicate(key, value).ok());
  }
  leader.flush();
  auto st = leader.wait_all_acked(30s);
  INFO((st.ok() ? std::string() : st.error().message()));
  REQUIRE(st.ok());
}

bool has_first_segment(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with("wal-00000000000000000001")) return true;
  return false;
}

// A leader's log in `dir` that no longer holds seq 1 (its first segment deleted behind its
// checkpoints), written through a follower of its own: a leader reopened on it starts any
// follower it has not written to with a checkpoint.
void write_log_past_its_start(const std::string& dir, const std::string& key) {
  MapStore fstore, lstore;
  auto follower = open(follower_options(key), fstore);
  auto leader =
      open(leader_options("builder", key, follower->local_endpoint().port, 0, dir), lstore);
  const Deadline d = Deadline::after(60s);
  for (int round = 0; round < 4 || has_first_segment(dir); ++round) {
    REQUIRE_FALSE(d.expired());
    write_acked(*leader, lstore, "forged-" + std::to_string(round) + "-", 1500, 1000);
    std::this_thread::sleep_for(60ms);  // the checkpointer ticks every 50 ms
  }
}

}  // namespace

TEST_CASE("without a key a forged leader's checkpoint is refused while the real leader is live",
          "[adversarial]") {
  TempDir forged_log;
  write_log_past_its_start(forged_log.path(), "");
  LogCapture logs;
  MapStore fstore, real_store;
  auto follower = open(follower_options(""), fstore);
  const uint16_t port = follower->local_endpoint().port;
  auto real = open(leader_options("leader-a", "", port, 1), real_store);
  write_acked(*real, real_store, "real", 100);

  SECTION("an epoch not above the live leader's: refused, nothing shipped") {
    for (const uint64_t epoch : {uint64_t{1}, uint64_t{0}}) {
      const uint64_t refused = follower->metrics().leaders_refused;
      MapStore forged_store;
      auto forged =
          open(leader_options("leader-x", "", port, epoch, forged_log.path()), forged_store);
      REQUIRE(eventually([&] { return follower->metrics().leaders_refused >= refused + 2; }));
      CHECK(logs.contains("refused leader leader-x", "leader-a"));
      write_acked(*real, real_store, "more" + std::to_string(epoch), 50);
      CHECK(follower->metrics().checkpoints_installed == 0);
      CHECK(fstore.digest() == real_store.digest());
      CHECK(follower->metrics().reconnects == 0);
    }
  }

  SECTION("a higher epoch takes over and its checkpoint is installed: only a key stops that") {
    // Without a key nothing tells a forged leader from a failover (docs/security.md): the
    // follower takes the claimed epoch, installs the checkpoint, names the takeover, and
    // refuses the real leader from then on.
    MapStore forged_store;
    auto forged = open(leader_options("leader-x", "", port, 2, forged_log.path()), forged_store);
    REQUIRE(eventually([&] { return follower->metrics().checkpoints_installed >= 1; }));
    REQUIRE(forged->wait_all_acked(20s).ok());
    CHECK(fstore.digest() == forged_store.digest());
    CHECK(logs.contains("leader-x", "took over the shards from leader leader-a"));
    REQUIRE(eventually([&] { return logs.contains("refused leader leader-a", "below epoch 2"); }));
  }
}

TEST_CASE("with a key a forged leader without it cannot handshake, let alone ship a checkpoint",
          "[adversarial]") {
  TempDir forged_log;
  write_log_past_its_start(forged_log.path(), "");
  const std::string key = "the replica set's key";
  LogCapture logs;
  MapStore fstore, real_store;
  auto follower = open(follower_options(key), fstore);
  const uint16_t port = follower->local_endpoint().port;
  auto real = open(leader_options("leader-a", key, port, 1), real_store);
  write_acked(*real, real_store, "real", 100);

  // No key at all, then a guessed one; each with an epoch that would take over.
  for (const std::string forged_key : {"", "a guessed key"}) {
    INFO("forged leader's key: '" << forged_key << "'");
    logs.clear();
    const uint64_t refused = follower->metrics().handshakes_refused;
    MapStore forged_store;
    auto forged =
        open(leader_options("leader-x", forged_key, port, 9, forged_log.path()), forged_store);
    REQUIRE(eventually([&] { return follower->metrics().handshakes_refused >= refused + 2; }));
    CHECK(logs.contains("refused a connection",
                        forged_key.empty() ? "pre_shared_key" : "authentication failed"));
    forged.reset();
    write_acked(*real, real_store, "more", 50);
    CHECK(follower->metrics().checkpoints_installed == 0);
    CHECK(follower->metrics().leaders_refused == 0);  // it never got as far as its hello
    CHECK(fstore.digest() == real_store.digest());
  }
}

TEST_CASE("with a key a checkpoint chunk changed on the way fails its tag and is not installed",
          "[adversarial]") {
  const std::string key = "the replica set's key";
  TempDir log;
  write_log_past_its_start(log.path(), key);
  LogCapture logs;
  MapStore fstore;
  auto follower = open(follower_options(key), fstore);
  // The leader, reopened on its log, reaches the follower through a proxy that changes a
  // byte of the first chunk it sees and fixes up the chunk's CRCs.
  TamperProxy proxy(follower->local_endpoint().port, TamperProxy::Attack::change_chunk, 0);
  MapStore leader_store;
  auto leader = open(leader_options("leader", key, proxy.port(), 0, log.path()), leader_store);
  REQUIRE(eventually([&] { return proxy.attacked(); }));
  REQUIRE(eventually([&] { return follower->metrics().auth_failures >= 1; }));
  CHECK(logs.contains("authentication failed: the MAC of a checkpoint chunk", "127.0.0.1"));
  // The leader reconnects and ships the checkpoint again, unchanged: the one installed.
  write_acked(*leader, leader_store, "after", 50);
  CHECK(follower->metrics().checkpoints_installed == 1);
  CHECK(fstore.digest() == leader_store.digest());
}
