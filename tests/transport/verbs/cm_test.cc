// Connection set-up through RDMA CM (use_rdma_cm) on Soft-RoCE: the CM private data names
// each side's handshake landing buffer, the bootstrap handshake runs over the connected QP
// (node ids, regions, app_data, pre-shared key), and the data path is the same as with the
// TCP bootstrap.
#include <arpa/inet.h>

#include <atomic>
#include <cstring>
#include <future>
#include <thread>

#include "pair.h"
#include "rdmarepl/core/clock.h"
#include "replication/log_capture.h"

namespace rdmarepl::transport::verbs::test {
namespace {

std::string vm_address() {
  const char* a = std::getenv("RDMAREPL_RXE_ADDR");
  return a != nullptr ? a : "10.9.0.1";
}

struct CmOutcome {
  Result<std::unique_ptr<Connection>> client;
  Result<std::unique_ptr<Connection>> server;
};

// Connects over RDMA CM with these options on each side; returns both sides' results.
CmOutcome cm_connect_pair(Transport& t, ConnectionOptions so, ConnectionOptions co) {
  auto listener = t.listen(Endpoint{vm_address(), 0});
  REQUIRE(listener);
  so.connect_timeout = co.connect_timeout = std::chrono::seconds(60);
  auto accepted = std::async(std::launch::async,
                             [&] { return (*listener)->accept(so, std::chrono::seconds(60)); });
  auto client = t.connect((*listener)->local_endpoint(), co);
  auto server = accepted.get();
  return {std::move(client), std::move(server)};
}

// A bare CM id with no QP: sends connect requests the listener must judge by their private
// data alone.
struct RawCmClient {
  CmChannelHandle ch{rdma_create_event_channel()};
  CmIdHandle id;

  rdma_cm_event_type next() {
    rdma_cm_event* ev = nullptr;
    REQUIRE(rdma_get_cm_event(ch.get(), &ev) == 0);
    const auto type = ev->event;
    rdma_ack_cm_event(ev);
    return type;
  }
  // Sends one connect request carrying `private_data`; returns the answering event.
  rdma_cm_event_type connect(const Endpoint& to, std::vector<uint8_t> private_data) {
    REQUIRE(ch);
    rdma_cm_id* raw = nullptr;
    REQUIRE(rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP) == 0);
    id.reset(raw);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(to.port);
    REQUIRE(inet_pton(AF_INET, to.host.c_str(), &dst.sin_addr) == 1);
    REQUIRE(rdma_resolve_addr(id.get(), nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) == 0);
    REQUIRE(next() == RDMA_CM_EVENT_ADDR_RESOLVED);
    REQUIRE(rdma_resolve_route(id.get(), 2000) == 0);
    REQUIRE(next() == RDMA_CM_EVENT_ROUTE_RESOLVED);
    rdma_conn_param param{};
    param.private_data = private_data.data();
    param.private_data_len = static_cast<uint8_t>(private_data.size());
    param.qp_num = 0x123;
    param.retry_count = 1;
    REQUIRE(rdma_connect(id.get(), &param) == 0);
    return next();
  }
};

// Version-2 private data naming a landing buffer nobody writes to.
std::vector<uint8_t> valid_private_data() {
  std::vector<uint8_t> d(20, 0);
  d[0] = 'R';
  d[1] = 2;
  d[2] = 4;
  RemoteRegion{0x1000, 4096, 1}.serialize(d.data() + 4);
  return d;
}

}  // namespace

TEST_CASE("an RDMA CM request that is not ours, or of another version, is rejected",
          "[verbs][cm]") {
  // The listener judges a request by its private data before it creates anything for it:
  // the request is rejected, logged with the reason and counted as refused.
  rdmarepl::test::LogCapture logs;
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  auto listener = t->listen(Endpoint{vm_address(), 0});
  REQUIRE(listener);
  const Endpoint at{vm_address(), (*listener)->local_endpoint().port};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> refused{0};
  ConnectionOptions so;
  so.counters = {&timeouts, &refused};
  struct Case {
    std::vector<uint8_t> data;
    const char* says;
  };
  std::vector<uint8_t> v1(20, 0);
  v1[0] = 'R';
  v1[1] = 1;
  const Case cases[] = {{std::vector<uint8_t>(20, 0x55), "is not an rdmarepl connection request"},
                        {v1, "speaks RDMA CM set-up version 1"}};
  uint64_t n = 0;
  for (const auto& c : cases) {
    RawCmClient client;
    auto answer = std::async(std::launch::async, [&] { return client.connect(at, c.data); });
    const auto give_up = Deadline::after(std::chrono::seconds(60));
    while (answer.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready &&
           !give_up.expired()) {
      // Nothing is handed over: accept() waits out its time.
      auto r = (*listener)->accept(so, std::chrono::milliseconds(100));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().is(Errc::timeout));
    }
    CHECK(answer.get() == RDMA_CM_EVENT_REJECTED);
    CHECK(refused.load() == ++n);
    CHECK(logs.contains("closed the connection from " + vm_address() + ":", c.says));
  }
  CHECK(timeouts.load() == 0);
}

TEST_CASE("an RDMA CM peer that never runs the handshake times out or is seen to leave",
          "[verbs][cm]") {
  rdmarepl::test::LogCapture logs;
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  auto listener = t->listen(Endpoint{vm_address(), 0});
  REQUIRE(listener);
  const Endpoint at{vm_address(), (*listener)->local_endpoint().port};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> refused{0};
  ConnectionOptions so;
  so.connect_timeout = std::chrono::milliseconds(1500);
  so.counters = {&timeouts, &refused};
  {  // Silent: held (no accept() call returns it) and disconnected at its deadline.
    RawCmClient client;
    std::atomic<bool> stop{false};
    auto accepting = std::async(std::launch::async, [&] {
      while (!stop) {
        auto r = (*listener)->accept(so, std::chrono::milliseconds(100));
        if (r.ok() || !r.error().is(Errc::timeout)) return false;
      }
      return true;
    });
    REQUIRE(client.connect(at, valid_private_data()) == RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(rdma_establish(client.id.get()) == 0);  // the listener's side is established
    const auto t0 = Clock::now();
    CHECK(client.next() == RDMA_CM_EVENT_DISCONNECTED);
    const auto held = Clock::now() - t0;
    stop = true;
    CHECK(accepting.get());
    INFO(
        "disconnected after " << std::chrono::duration_cast<std::chrono::milliseconds>(held).count()
                              << " ms");
    CHECK(held > std::chrono::milliseconds(1000));
    CHECK(timeouts.load() == 1);
    CHECK(logs.contains("handshake with " + vm_address() + ":", "it sent nothing"));
  }
  {  // Leaves: handed over at once, and the handshake reports it.
    RawCmClient client;
    auto accepted = std::async(std::launch::async,
                               [&] { return (*listener)->accept(so, std::chrono::seconds(60)); });
    REQUIRE(client.connect(at, valid_private_data()) == RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(rdma_establish(client.id.get()) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(rdma_disconnect(client.id.get()) == 0);
    auto r = accepted.get();
    REQUIRE_FALSE(r.ok());
    INFO(r.error().to_string());
    CHECK(r.error().is(Errc::connection_closed));
    CHECK_THAT(r.error().message(), Catch::Contains("disconnected during the handshake"));
    CHECK(refused.load() == 1);
  }
}

TEST_CASE("RDMA CM connects, exchanges ring descriptors and carries writes", "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  std::vector<uint8_t> ring(4096, 0);
  auto mr =
      t->register_memory(ring.data(), ring.size(), Access::local_write | Access::remote_write);
  REQUIRE(mr);
  auto listener = t->listen(Endpoint{vm_address(), 0});
  REQUIRE(listener);
  CHECK((*listener)->local_endpoint().port != 0);
  ConnectionOptions so;
  so.regions = {(*mr)->remote()};
  auto accepted = std::async(std::launch::async,
                             [&] { return (*listener)->accept(so, std::chrono::seconds(60)); });
  ConnectionOptions co;
  co.connect_timeout = std::chrono::seconds(60);
  auto client = t->connect((*listener)->local_endpoint(), co);
  auto server = accepted.get();
  REQUIRE(client);
  REQUIRE(server);
  auto& c = **client;
  auto& s = **server;
  REQUIRE(c.peer().regions.size() == 1);
  CHECK(c.peer().regions[0] == (*mr)->remote());
  CHECK(s.peer().regions.empty());
  CHECK_THAT(c.peer().address, Catch::Contains(vm_address()));

  REQUIRE(s.post_recvs(1, 9) == PostStatus::ok);
  const RemoteRegion dst = c.peer().regions[0];
  char msg[6] = "hello";
  WriteRequest w{1, msg, sizeof msg, 0, dst.addr + 8, dst.rkey, 4242, true};
  REQUIRE(c.post_writes({&w, 1}) == PostStatus::ok);
  auto got = reap(s, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].imm == 4242);
  CHECK(got[0].wr_id == 9);
  CHECK(std::memcmp(ring.data() + 8, msg, sizeof msg) == 0);
  CHECK(reap(c, 1).size() == 1);
  CHECK(static_cast<VerbsConnection&>(c).path_mtu() == IBV_MTU_1024);

  // A CM disconnect reaches the peer.
  c.close();
  for (int i = 0; i < 1000 && s.healthy(); ++i) (void)s.wait(std::chrono::milliseconds(10));
  CHECK_FALSE(s.healthy());
  CHECK(s.error().is(Errc::connection_closed));
}

TEST_CASE("RDMA CM carries node ids, app_data and many regions, authenticated with a key",
          "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  ConnectionOptions so;
  so.node_id = "follower-1";
  so.pre_shared_key = "a shared secret";
  so.app_data = std::string(3000, 's');
  for (uint32_t i = 0; i < 40; ++i) so.regions.push_back({0x10000u + i * 4096u, 4096, 100 + i});
  so.initial_recvs = 2;
  ConnectionOptions co;
  co.node_id = "leader";
  co.pre_shared_key = so.pre_shared_key;
  co.app_data = "hello from the leader";
  auto r = cm_connect_pair(*t, so, co);
  INFO((r.client ? std::string() : r.client.error().to_string()));
  INFO((r.server ? std::string() : r.server.error().to_string()));
  REQUIRE(r.client);
  REQUIRE(r.server);
  auto& c = **r.client;
  auto& s = **r.server;
  CHECK(c.peer().node_id == "follower-1");
  CHECK(s.peer().node_id == "leader");
  CHECK(c.peer().app_data == so.app_data);
  CHECK(s.peer().app_data == co.app_data);
  CHECK(c.peer().regions == so.regions);
  CHECK(s.peer().regions.empty());
  CHECK_THAT(c.peer().address, Catch::Contains(vm_address()));

  // The handshake consumed none of the data path's receives: the two initial ones (wr_ids 0
  // and 1) take the client's first two writes, posted at once.
  CHECK(static_cast<VerbsConnection&>(s).posted_recvs() == 2);
  WriteRequest w[2] = {{1, nullptr, 0, 0, 0, 0, 7, false}, {2, nullptr, 0, 0, 0, 0, 8, true}};
  REQUIRE(c.post_writes(w) == PostStatus::ok);
  auto got = reap(s, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].wr_id == 0);
  CHECK(got[0].imm == 7);
  CHECK(got[1].wr_id == 1);
  CHECK(got[1].imm == 8);
  CHECK(static_cast<VerbsConnection&>(s).posted_recvs() == 0);
  CHECK(reap(c, 1).size() == 1);
}

TEST_CASE("RDMA CM refuses a wrong pre-shared key on both sides", "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  ConnectionOptions so;
  so.pre_shared_key = "right";
  ConnectionOptions co;
  co.pre_shared_key = "wrong";
  auto r = cm_connect_pair(*t, so, co);
  REQUIRE_FALSE(r.client.ok());
  REQUIRE_FALSE(r.server.ok());
  INFO(r.client.error().to_string() << " / " << r.server.error().to_string());
  CHECK(r.client.error().is(Errc::auth_failed));
  CHECK(r.server.error().is(Errc::auth_failed));
  CHECK_THAT(r.server.error().message(), Catch::Contains("pre-shared key"));

  // A key on one side only is refused as well.
  co.pre_shared_key.clear();
  auto r2 = cm_connect_pair(*t, so, co);
  REQUIRE_FALSE(r2.client.ok());
  REQUIRE_FALSE(r2.server.ok());
  CHECK(r2.client.error().is(Errc::auth_failed));
  CHECK(r2.server.error().is(Errc::auth_failed));
}

TEST_CASE("RDMA CM works with a shared receive queue and automatic receives", "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  opts.use_srq = true;
  opts.auto_recv = true;
  opts.srq_depth = 1024;
  auto t = make_transport(opts);
  ConnectionOptions so;
  so.recv_queue_depth = 64;
  so.app_data = "srq";
  ConnectionOptions co = so;
  for (int round = 0; round < 2; ++round) {  // the handshakes leave the SRQ's level unchanged
    auto r = cm_connect_pair(*t, so, co);
    REQUIRE(r.client);
    REQUIRE(r.server);
    CHECK((*r.client)->peer().app_data == "srq");
    WriteRequest w{1, nullptr, 0, 0, 0, 0, 99, true};
    REQUIRE((*r.client)->post_writes({&w, 1}) == PostStatus::ok);
    auto got = reap(**r.server, 1);
    REQUIRE(got.size() == 1);
    CHECK(got[0].imm == 99);
    CHECK(reap(**r.client, 1).size() == 1);
  }
}

TEST_CASE("RDMA CM connect to a port nobody listens on fails clearly", "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  ConnectionOptions o;
  o.connect_timeout = std::chrono::seconds(5);
  auto c = t->connect(Endpoint{vm_address(), 1}, o);
  REQUIRE_FALSE(c.ok());
  INFO(c.error().message());
  CHECK_THAT(c.error().message(), Catch::Contains("RDMA CM"));
}

}  // namespace rdmarepl::transport::verbs::test
