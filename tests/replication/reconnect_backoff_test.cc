// The leader's reconnect backoff: consecutive failures double the wait up to
// reconnect_max_interval, a connection that made progress starts it again from
// reconnect_interval (one that fails right after the handshake does not: see
// misbehaving_follower_test.cc), and a bad setting is refused with a message naming both
// options.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "log_capture.h"
#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LoopbackFabric;
using test::LoopbackTransport;
using test::MapStore;

namespace {

using Channel = ReplicationChannel<MapStore>;

// The wait of every "retrying in N ms" line the leader logged, in order.
std::vector<int> retry_waits(const test::LogCapture& logs) {
  static const std::regex re("cannot connect .*retrying in ([0-9]+) ms");
  std::vector<int> waits;
  std::smatch match;
  for (const auto& line : logs.lines())
    if (std::regex_search(line, match, re)) waits.push_back(std::stoi(match[1].str()));
  return waits;
}

ChannelOptions options() {
  auto o = test::loopback_options();
  o.shards = 1;
  o.reconnect_interval = 10ms;
  o.reconnect_max_interval = 80ms;
  return o;
}

std::unique_ptr<Channel> open(const ChannelOptions& o, MapStore& store,
                              const std::shared_ptr<LoopbackFabric>& fabric) {
  auto ch = Channel::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  INFO((ch.ok() ? std::string() : ch.error().message()));
  REQUIRE(ch.ok());
  return std::move(ch).value();
}

template <typename Pred>
bool eventually(Pred pred, Duration limit = 10s) {
  const Deadline d = Deadline::after(limit);
  while (!pred()) {
    if (d.expired()) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

}  // namespace

TEST_CASE("reconnect attempts back off exponentially to the cap and restart after a success",
          "[replication][concurrency]") {
  test::LogCapture logs;
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = options();
  o.role = Role::leader;
  o.peers = {{"loopback", 30900}};  // nobody listens there yet
  MapStore leader_store;
  auto leader = open(o, leader_store, fabric);

  // Each consecutive failure doubles the wait; at the cap the message repeats and is not
  // logged again.
  const std::vector<int> ramp = {10, 20, 40, 80};
  REQUIRE(eventually([&] { return retry_waits(logs).size() >= ramp.size(); }));
  std::this_thread::sleep_for(300ms);  // several attempts at the cap
  CHECK(retry_waits(logs) == ramp);

  // A follower appears: the leader connects within one capped wait and replicates.
  MapStore follower_store;
  auto follower = open(test::loopback_follower(options(), 30900), follower_store, fabric);
  auto w = leader->replicate("k", "v");
  REQUIRE(w.ok());
  REQUIRE(eventually([&] {
    std::lock_guard lock(follower_store.mu);
    return follower_store.data.size() == 1;
  }));
  REQUIRE(leader->wait(w.ticket, 10s).ok());  // the leader has seen the acknowledgement

  // It made progress (the record was acknowledged), then goes away: the failures start again
  // from reconnect_interval.
  logs.clear();
  follower.reset();
  REQUIRE(eventually([&] { return retry_waits(logs).size() >= 2; }));
  const auto again = retry_waits(logs);
  CHECK(again[0] == 10);
  CHECK(again[1] == 20);
}

TEST_CASE("a reconnect cap below the first interval is refused with what to change",
          "[replication]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = options();
  o.role = Role::leader;
  o.peers = {{"loopback", 30901}};
  o.reconnect_interval = 500ms;
  o.reconnect_max_interval = 100ms;
  MapStore store;
  auto ch = Channel::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE_FALSE(ch.ok());
  CHECK_THAT(ch.error().message(), Catch::Contains("reconnect_max_interval = 100 ms") &&
                                       Catch::Contains("reconnect_interval = 500 ms"));
}
