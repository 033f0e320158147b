// `rdmarepl-doctor --peer` against a follower's replication channel over TCP (the probe of
// docs/wire_format.md, "Probe"): the doctor prints a PASS line with the round trip's time,
// the follower's store is unchanged and its leader's session undisturbed while the leader
// keeps writing; with a pre-shared key, the right key passes and a wrong one fails with a
// line that says what to do.
#include <sys/wait.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "rdmarepl/rdmarepl.h"
#include "replication/test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::MapStore;
using Channel = ReplicationChannel<MapStore>;
namespace fs = std::filesystem;

namespace {

std::string doctor(const std::string& args) {
  std::string out;
  FILE* p = ::popen((std::string(DOCTOR_PATH) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

bool has_line(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex(pattern, std::regex::multiline));
}

ChannelOptions options(Role role, const std::string& key) {
  ChannelOptions o;
  o.role = role;
  o.node_id = role == Role::leader ? "probe-leader" : "probe-follower";
  o.transport = TransportKind::tcp;
  o.shards = 2;
  o.ring_bytes = 256 * 1024;
  o.retain_bytes = 1 << 20;
  o.batch_bytes = 16 * 1024;
  o.max_value_bytes = 4096;
  o.pre_shared_key = key;
  if (role == Role::follower) o.listen = {"127.0.0.1", 0};
  return o;
}

std::string key_file(const std::string& key) {
  const fs::path p =
      fs::temp_directory_path() / ("rdmarepl-probe-key-" + std::to_string(::getpid()));
  std::ofstream(p) << key << "\n";
  return p.string();
}

// A leader and its follower in this process; the leader writes `n` records.
struct Pair {
  MapStore leader_store, follower_store;
  std::unique_ptr<Channel> follower, leader;
  uint64_t written = 0;

  explicit Pair(const std::string& key) {
    auto f = Channel::create(options(Role::follower, key), follower_store);
    INFO((f ? std::string() : f.error().message()));
    REQUIRE(f.ok());
    follower = std::move(f).value();
    auto lo = options(Role::leader, key);
    lo.peers = {{"127.0.0.1", follower->local_endpoint().port}};
    auto l = Channel::create(lo, leader_store);
    INFO((l ? std::string() : l.error().message()));
    REQUIRE(l.ok());
    leader = std::move(l).value();
  }
  void write(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i, ++written) {
      const std::string k = "key-" + std::to_string(written % 5000);
      const std::string v(64 + written % 200, static_cast<char>('a' + written % 26));
      leader_store.put(k, v);
      while (!leader->replicate(k, v).ok()) std::this_thread::sleep_for(1ms);
    }
  }
  void require_converged() {
    REQUIRE(leader->wait_all_acked(30s).ok());
    CHECK(follower_store.digest() == leader_store.digest());
    CHECK(follower->metrics().records_applied == written);
  }
  std::string peer() const {
    return "127.0.0.1:" + std::to_string(follower->local_endpoint().port);
  }
};

const std::string kPass =
    "^PASS peer 127.0.0.1:\\d+: write-with-immediate round trip to follower 'probe-follower' "
    "\\(2 shards\\) over tcp in \\d+ us";

}  // namespace

TEST_CASE("doctor --peer probes a follower's channel and leaves it untouched", "[doctor][host]") {
  Pair p("");
  p.write(2000);
  p.require_converged();
  const uint64_t digest = p.follower_store.digest();
  const auto before = p.follower->metrics();

  // A quiet channel: the probe changes nothing but the probe counter.
  auto out = doctor("--transport tcp --peer " + p.peer());
  INFO(out);
  CHECK(has_line(out, kPass));
  auto after = p.follower->metrics();
  CHECK(p.follower_store.digest() == digest);
  CHECK(after.records_applied == before.records_applied);
  CHECK(after.shard_seq == before.shard_seq);
  CHECK(after.probes_answered == before.probes_answered + 1);
  CHECK(after.reconnects == 0);
  CHECK(after.handshakes_refused == 0);
  CHECK(after.leaders_refused == 0);

  // A leader writing throughout: it keeps going, on the same session.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load()) p.write(200);
  });
  std::this_thread::sleep_for(50ms);
  for (int i = 0; i < 3; ++i) {
    const uint64_t applied = p.follower->metrics().records_applied;
    auto again = doctor("--transport tcp --peer " + p.peer());
    INFO(again);
    CHECK(has_line(again, kPass));
    // Replication went on while the doctor ran.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (p.follower->metrics().records_applied == applied &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    CHECK(p.follower->metrics().records_applied > applied);
  }
  stop = true;
  writer.join();
  p.require_converged();
  CHECK(p.follower->metrics().probes_answered == before.probes_answered + 4);
  CHECK(p.follower->metrics().reconnects == 0);
  CHECK(p.leader->metrics().reconnects == 0);
  CHECK(p.leader->metrics().protocol_errors == 0);
}

TEST_CASE("doctor --peer with the follower's key passes, with a wrong key fails and says why",
          "[doctor][host]") {
  Pair p("the replication key");
  p.write(500);
  p.require_converged();
  const std::string good = key_file("the replication key");
  auto out = doctor("--transport tcp --key-file " + good + " --peer " + p.peer());
  INFO(out);
  CHECK(has_line(out, kPass));

  const std::string wrong = key_file("another key");
  auto refused = doctor("--transport tcp --key-file " + wrong + " --peer " + p.peer());
  INFO(refused);
  CHECK(has_line(refused,
                 "^FAIL peer 127.0.0.1:\\d+: .*; fix: give the peer's pre-shared key "
                 "\\(--key-file with the follower's ChannelOptions::pre_shared_key\\)"));
  auto none = doctor("--transport tcp --peer " + p.peer());
  INFO(none);
  CHECK(has_line(none, "^FAIL peer 127.0.0.1:\\d+: .*; fix: give the peer's pre-shared key"));
  fs::remove(wrong);
  fs::remove(good);
  p.write(500);
  p.require_converged();
  CHECK(p.follower->metrics().probes_answered == 1);
  CHECK(p.follower->metrics().reconnects == 0);
}
