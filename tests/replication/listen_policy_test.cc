// Who may reach a follower (src/replication/listen_policy.h): over real TCP sockets on every
// interface, a follower without a key is refused at create() unless it opts out, and warns
// when it does.
#include <catch2/catch.hpp>

#include "log_capture.h"
#include "rdmarepl/rdmarepl.h"
#include "test_store.h"

using namespace rdmarepl;
using test::LogCapture;
using test::MapStore;

namespace {

ChannelOptions follower_on_all_interfaces() {
  ChannelOptions o;
  o.role = Role::follower;
  o.node_id = "follower";
  o.transport = TransportKind::tcp;
  o.listen = {"0.0.0.0", 0};
  o.shards = 1;
  o.ring_bytes = 256 * 1024;
  o.batch_bytes = 16 * 1024;
  o.max_value_bytes = 4096;
  return o;
}

}  // namespace

TEST_CASE("a follower on every interface needs a key or allow_unauthenticated, and warns",
          "[replication]") {
  LogCapture logs;
  MapStore store;
  auto o = follower_on_all_interfaces();
  auto refused = ReplicationChannel<MapStore>::create(o, store);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(),
             Catch::Contains("pre_shared_key") && Catch::Contains("allow_unauthenticated"));

  o.pre_shared_key = "the same on every node";
  {
    auto keyed = ReplicationChannel<MapStore>::create(o, store);
    REQUIRE(keyed.ok());
  }
  CHECK_FALSE(logs.contains("listening without a pre_shared_key"));

  o.pre_shared_key.clear();
  o.allow_unauthenticated = true;
  auto open = ReplicationChannel<MapStore>::create(o, store);
  REQUIRE(open.ok());
  CHECK(logs.contains("listening without a pre_shared_key", "can act as this follower's leader"));
}
