// Remote reads over real TCP sockets: consistency levels, batching, failover.
#include <catch2/catch.hpp>

#include <thread>

#include "read_cluster.h"

using namespace rdmarepl;
using namespace rdmarepl::reads;
using namespace std::chrono_literals;
using test::ReadCluster;

namespace {

std::string value_of(int i, size_t len = 100) {
  std::string v = "v" + std::to_string(i) + "-";
  v.resize(len, static_cast<char>('a' + i % 26));
  return v;
}

}  // namespace

TEST_CASE("reads: replicas answer batched gets with what they applied", "[reads]") {
  ReadCluster c(2);
  constexpr int kKeys = 500;
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("key-" + std::to_string(i));
    c.write(keys.back(), value_of(i, static_cast<size_t>(i * 37 % 3000)));
  }
  REQUIRE(c.leader->wait_all_acked(20s).ok());
  auto client = c.client();
  CHECK(client->live_replicas() == 2);
  std::vector<std::string_view> ask(keys.begin(), keys.end());
  ask.push_back("missing");
  auto got = client->get(ask);
  INFO((got.ok() ? std::string() : got.error().message()));
  REQUIRE(got.ok());
  REQUIRE(got->size() == kKeys + 1);
  for (int i = 0; i < kKeys; ++i) {
    INFO("key " << i);
    CHECK((*got)[size_t(i)].status == ReadStatus::found);
    CHECK((*got)[size_t(i)].value == value_of(i, static_cast<size_t>(i * 37 % 3000)));
  }
  CHECK(got->back().status == ReadStatus::not_found);
  // 501 keys in messages of 64: both replicas took some.
  CHECK(test::eventually(
      [&] { return c.servers[0]->stats().keys + c.servers[1]->stats().keys == kKeys + 1; }));
  CHECK(c.servers[0]->stats().requests > 0);
  CHECK(c.servers[1]->stats().requests > 0);
}

TEST_CASE("reads: values larger than one response come back over several", "[reads]") {
  ReadServerOptions so;
  so.max_response_bytes = 64 * 1024;
  ReadCluster c(1, so);
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back("big-" + std::to_string(i));
    c.write(keys.back(), value_of(i, 16 * 1024));
  }
  REQUIRE(c.leader->wait_all_acked(20s).ok());
  auto client = c.client();
  std::vector<std::string_view> ask(keys.begin(), keys.end());
  auto got = client->get(ask);
  REQUIRE(got.ok());
  for (int i = 0; i < 20; ++i) CHECK((*got)[size_t(i)].value == value_of(i, 16 * 1024));
  // At most 3 values of 16 KiB fit in a 64 KiB response.
  CHECK(test::eventually([&] { return c.servers[0]->stats().requests >= 6; }));
}

TEST_CASE("reads: at_least waits for the ticket or answers how far behind", "[reads]") {
  ReadCluster c(1);
  auto client = c.client();
  for (int round = 0; round < 50; ++round) {
    const Ticket t = c.write("counter", std::to_string(round));
    c.leader->flush();
    auto r = client->get("counter", Consistency::at_least(t, 2000ms));
    REQUIRE(r.ok());
    REQUIRE(r->status == ReadStatus::found);
    CHECK(r->value == std::to_string(round));  // never older than our own write
  }
  const Ticket last = c.write("counter", "x");
  REQUIRE(c.leader->wait(last, 5s).ok());
  Ticket future = last;
  future.seq += 1000;
  auto r = client->get("counter", Consistency::at_least(future, 30ms));
  REQUIRE(r.ok());
  CHECK(r->status == ReadStatus::behind);
  CHECK(r->behind_by == 1000);
  CHECK(test::eventually([&] { return c.servers[0]->stats().behind == 1; }));
  // Without waiting at all.
  r = client->get("counter", Consistency::at_least(future, 0ms));
  REQUIRE(r.ok());
  CHECK(r->status == ReadStatus::behind);
  // A shard that does not exist is a malformed request.
  Ticket bogus{99, 1};
  auto bad = client->get("counter", Consistency::at_least(bogus, 0ms));
  CHECK_FALSE(bad.ok());
}

TEST_CASE("reads: leader reads go to the leader's server only", "[reads]") {
  ReadCluster c(1);
  auto plain = c.client();
  auto no_leader = plain->get("k", Consistency::leader());
  REQUIRE_FALSE(no_leader.ok());
  CHECK(no_leader.error().code() == make_error_code(Errc::invalid_argument));
  c.serve_leader();
  c.leader_store.put("only-on-leader", "L");  // not replicated: only the leader has it
  auto client = c.client();
  auto r = client->get("only-on-leader", Consistency::leader());
  REQUIRE(r.ok());
  CHECK(r->status == ReadStatus::found);
  CHECK(r->value == "L");
  auto f = client->get("only-on-leader");
  REQUIRE(f.ok());
  CHECK(f->status == ReadStatus::not_found);  // the follower never saw it
}

TEST_CASE("reads: a replica that goes away is failed over", "[reads]") {
  ReadCluster c(2);
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {
    keys.push_back("f-" + std::to_string(i));
    c.write(keys.back(), value_of(i));
  }
  REQUIRE(c.leader->wait_all_acked(20s).ok());
  auto o = c.client_options();
  o.reconnect_interval = 10s;
  auto client = ReadClient::connect(o);
  REQUIRE(client.ok());
  std::vector<std::string_view> ask(keys.begin(), keys.end());
  REQUIRE((*client)->get(ask).ok());
  c.servers[0]->close();
  for (int round = 0; round < 3; ++round) {
    auto got = (*client)->get(ask);
    INFO((got.ok() ? std::string() : got.error().message()));
    REQUIRE(got.ok());
    for (int i = 0; i < 300; ++i) CHECK((*got)[size_t(i)].value == value_of(i));
  }
  CHECK((*client)->live_replicas() == 1);
  c.servers[1]->close();
  auto none = (*client)->get(ask);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code() == make_error_code(Errc::connection_refused));
  CHECK(none.error().message().find("no read replica is reachable") != std::string::npos);
}

TEST_CASE("reads: a client with nothing to connect to is refused with the reason", "[reads]") {
  ReadClientOptions o;
  CHECK_FALSE(ReadClient::connect(o).ok());  // no endpoint at all
  o.replicas = {{"127.0.0.1", 1}};
  o.connect_timeout = 500ms;
  auto c = ReadClient::connect(o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message().find("127.0.0.1:1") != std::string::npos);
}

TEST_CASE("reads: a server without a key beyond loopback needs allow_unauthenticated", "[reads]") {
  ReadServerOptions o;
  o.listen = {"0.0.0.0", 0};
  auto st = o.validate();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::invalid_argument));
  CHECK_THAT(st.error().message(), Catch::Contains("could read the whole store") &&
                                       Catch::Contains("allow_unauthenticated"));
  o.pre_shared_key = "k";
  CHECK(o.validate().ok());
  o.pre_shared_key.clear();
  o.allow_unauthenticated = true;
  CHECK(o.validate().ok());
  o.allow_unauthenticated = false;
  for (const char* host : {"127.0.0.1", "127.0.0.2", "localhost", "::1"}) {
    o.listen.host = host;
    INFO(host);
    CHECK(o.validate().ok());
  }
}
