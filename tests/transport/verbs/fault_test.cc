// Faults on Soft-RoCE: a forged rkey, an address past the region, a QP transition with bad
// attributes, and (tag [linkdown], run in its own VM) the link going down mid-stream.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "pair.h"
#include "transport/verbs/qp.h"

namespace rdmarepl::transport::verbs::test {
namespace {

struct Target {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096, 0xab);
  std::unique_ptr<MemoryRegion> mr;
};

// Writes once with `w` (addresses/keys chosen by `forge`) and returns the requester's
// completion; the target's bytes must be unchanged.
void expect_remote_access_error(uint64_t addr_offset, uint32_t rkey_xor) {
  auto t = make_transport();
  Target target;
  auto mr = t->register_memory(target.bytes.data(), target.bytes.size(),
                               Access::local_write | Access::remote_write);
  REQUIRE(mr);
  target.mr = std::move(*mr);
  ConnectionOptions so;
  so.regions = {target.mr->remote()};
  auto p = connect(*t, *t, so);
  REQUIRE(p.server->post_recvs(4) == PostStatus::ok);
  const RemoteRegion dst = p.client->peer().regions[0];
  char payload[64];
  std::memset(payload, 0x11, sizeof payload);
  WriteRequest ws[2] = {
      {1, payload, sizeof payload, 0, dst.addr + addr_offset, dst.rkey ^ rkey_xor, 5, true},
      {2, payload, sizeof payload, 0, dst.addr, dst.rkey, 6, true},  // flushed behind it
  };
  REQUIRE(p.client->post_writes(ws) == PostStatus::ok);
  auto got = reap(*p.client, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].wr_id == 1);
  CHECK(got[0].status == WcStatus::remote_access_error);
  CHECK(got[1].status == WcStatus::flushed);
  CHECK_FALSE(p.client->healthy());
  const Error e = p.client->error();
  INFO(e.message());
  CHECK_THAT(e.message(), Catch::Contains("IBV_WC_REM_ACCESS_ERR"));
  CHECK_THAT(e.message(), Catch::Contains("rkey"));  // the advice
  CHECK(p.client->post_writes({&ws[1], 1}) == PostStatus::disconnected);
  // Target memory unchanged; the target's QP errors out too and says so.
  for (auto b : target.bytes) REQUIRE(b == 0xab);
  for (int i = 0; i < 1000 && p.server->healthy(); ++i) {
    Completion c[8];
    (void)p.server->poll(c);
    (void)p.server->wait(std::chrono::milliseconds(10));
  }
  CHECK_FALSE(p.server->healthy());
}

}  // namespace

TEST_CASE("a forged rkey is a remote access error, target memory unchanged", "[verbs][fault]") {
  expect_remote_access_error(0, 0x5a5a00);
}

TEST_CASE("an address past the region is a remote access error", "[verbs][fault]") {
  expect_remote_access_error(4096 - 8, 0);  // 64 bytes at offset 4088 overrun by 56
}

TEST_CASE("a wrong lkey fails the request locally, the target is untouched", "[verbs][fault]") {
  auto t = make_transport();
  Target target;
  auto mr = t->register_memory(target.bytes.data(), target.bytes.size(),
                               Access::local_write | Access::remote_write);
  REQUIRE(mr);
  std::vector<uint8_t> src(4096, 0x22);
  auto smr = t->register_memory(src.data(), src.size(), Access::local_write);
  REQUIRE(smr);
  ConnectionOptions so;
  so.regions = {(*mr)->remote()};
  auto p = connect(*t, *t, so);
  REQUIRE(p.server->post_recvs(2) == PostStatus::ok);
  const RemoteRegion dst = p.client->peer().regions[0];
  // Longer than max_inline_data: inline writes do not use the lkey at all.
  WriteRequest w{3,        src.data(), 1024, (*smr)->region().keys.lkey ^ 0xffffffffu,
                 dst.addr, dst.rkey,   1,    true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);
  auto got = reap(*p.client, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].wr_id == 3);
  // mlx5 reports IBV_WC_LOC_PROT_ERR; rxe reports IBV_WC_LOC_QP_OP_ERR.
  CHECK((got[0].status == WcStatus::local_protection_error ||
         got[0].status == WcStatus::local_qp_error));
  CHECK_FALSE(p.client->healthy());
  for (auto b : target.bytes) REQUIRE(b == 0xab);
}

TEST_CASE("a failed QP transition reports the attributes it tried", "[verbs][fault]") {
  auto t = make_transport();
  const Device& dev = t->device();
  CqHandle cq(ibv_create_cq(dev.context(), 4, nullptr, nullptr, 0));
  REQUIRE(cq);
  ibv_qp_init_attr init{};
  init.send_cq = cq.get();
  init.recv_cq = cq.get();
  init.qp_type = IBV_QPT_RC;
  init.cap = {4, 4, 1, 1, 0};
  QpHandle qp(ibv_create_qp(dev.pd(), &init));
  REQUIRE(qp);
  QpEndpoint remote;
  remote.qpn = 0x123;
  remote.psn = 0x456;
  // RESET -> RTR skips INIT: the device refuses, and the message names what was tried.
  auto st = qp_to_rtr(qp.get(), dev, remote, IBV_MTU_1024, QpTuning{}, "test");
  REQUIRE_FALSE(st.ok());
  const std::string m = st.error().message();
  INFO(m);
  CHECK_THAT(m, Catch::Contains("INIT->RTR"));
  CHECK_THAT(m, Catch::Contains("path MTU 1024"));
  CHECK_THAT(m, Catch::Contains("rq PSN 0x456"));
  CHECK_THAT(m, Catch::Contains(fmt::format("sgid index {}", dev.gid_index())));
  auto rts = qp_to_rts(qp.get(), 0x42, QpTuning{}, "test");
  REQUIRE_FALSE(rts.ok());
  CHECK_THAT(rts.error().message(), Catch::Contains("sq PSN 0x42"));
  REQUIRE(qp_to_init(qp.get(), dev, IBV_ACCESS_REMOTE_WRITE, "test"));
  CHECK(qp_state(qp.get()) == IBV_QPS_INIT);
}

// Feeds the transport's async event reader an event as the device would deliver it.
void deliver(const VerbsTransport& t, ibv_async_event ev) {
  const_cast<AsyncEventMonitor&>(t.async_events()).handle(ev);
}

// Polls `c` until it leaves the healthy state (or about five seconds pass).
void poll_until_failed(Connection& c) {
  for (int i = 0; i < 250 && c.healthy(); ++i) {
    Completion buf[4];
    (void)c.poll(buf);
    (void)c.wait(std::chrono::milliseconds(20));
  }
}

TEST_CASE("a fatal QP event fails that QP's connection only", "[fault]") {
  auto t = make_transport();
  auto hit = connect(*t, *t);
  auto other = connect(*t, *t);
  const uint64_t before = t->async_events().events();
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_QP_FATAL;
  ev.element.qp = hit.c().qp();
  deliver(*t, ev);
  ev.event_type = IBV_EVENT_COMM_EST;  // not fatal: only logged
  ev.element.qp = other.c().qp();
  deliver(*t, ev);
  CHECK(t->async_events().events() == before + 2);
  poll_until_failed(*hit.client);
  CHECK_FALSE(hit.client->healthy());
  INFO(hit.client->error().message());
  CHECK_THAT(hit.client->error().message(), Catch::Contains("IBV_EVENT_QP_FATAL"));
  WriteRequest w{0, nullptr, 0, 0, 0, 0, 0, true};
  CHECK(hit.client->post_writes({&w, 1}) == PostStatus::disconnected);
  Completion buf[4];
  (void)other.client->poll(buf);
  CHECK(other.client->healthy());
  CHECK(other.server->healthy());
}

TEST_CASE("a port error event fails the connections made before it, not later ones", "[fault]") {
  auto t = make_transport();
  auto before = connect(*t, *t);
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_PORT_ERR;
  ev.element.port_num = t->device().port();
  deliver(*t, ev);
  CHECK(t->async_events().port_errors() == 1);
  poll_until_failed(*before.server);
  CHECK_FALSE(before.server->healthy());
  CHECK_THAT(before.server->error().message(), Catch::Contains("IBV_EVENT_PORT_ERR"));
  ev.event_type = IBV_EVENT_PORT_ACTIVE;  // logged only
  deliver(*t, ev);
  ev.event_type = IBV_EVENT_SM_CHANGE;  // neither: logged at debug level
  deliver(*t, ev);
  CHECK(t->async_events().port_errors() == 1);
  // A connection made after the error works: the link (here never really down) is back.
  std::vector<uint8_t> ring(4096);
  auto mr =
      t->register_memory(ring.data(), ring.size(), Access::local_write | Access::remote_write);
  REQUIRE(mr);
  ConnectionOptions so;
  so.regions = {(*mr)->remote()};
  so.initial_recvs = 1;
  auto after = connect(*t, *t, so);
  const RemoteRegion dst = after.client->peer().regions[0];
  WriteRequest w{7, nullptr, 0, 0, dst.addr, dst.rkey, 42, true};
  REQUIRE(after.client->post_writes({&w, 1}) == PostStatus::ok);
  auto got = reap(*after.client, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].status == WcStatus::success);
  CHECK(after.client->healthy());
}

TEST_CASE("a fatal device event fails every connection of the transport", "[fault]") {
  auto t = make_transport();
  auto p = connect(*t, *t);
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_DEVICE_FATAL;
  deliver(*t, ev);
  CHECK(t->async_events().port_errors() == 1);
  poll_until_failed(*p.client);
  CHECK_FALSE(p.client->healthy());
  CHECK_FALSE(p.client->error().message().empty());
}

TEST_CASE("the link going down mid-stream fails the connection", "[.linkdown]") {
  auto opts = vm_options();
  opts.qp.timeout = 10;  // ~4 ms per try: fail fast if the port error shows as a timeout
  opts.qp.retry_cnt = 2;
  auto t = make_transport(opts);
  std::vector<uint8_t> ring(1 << 16);
  auto mr =
      t->register_memory(ring.data(), ring.size(), Access::local_write | Access::remote_write);
  REQUIRE(mr);
  ConnectionOptions so;
  so.regions = {(*mr)->remote()};
  so.recv_queue_depth = 4096;
  auto p = connect(*t, *t, so);
  REQUIRE(p.server->post_recvs(4000) == PostStatus::ok);
  // A second connection that carries nothing: only the port error tells it the link died.
  auto idle = connect(*t, *t);
  const uint64_t port_errors_before = t->async_events().port_errors();
  const RemoteRegion dst = p.client->peer().regions[0];
  std::vector<uint8_t> src(1024, 0x33);
  auto smr = t->register_memory(src.data(), src.size(), Access::local_write);
  REQUIRE(smr);
  uint32_t posted = 0;
  bool link_down = false;
  WcStatus seen = WcStatus::success;
  Completion buf[64];
  for (int spins = 0; spins < 200000 && seen == WcStatus::success; ++spins) {
    if (posted == 100 && !link_down) {
      REQUIRE(std::system("ip link set veth0 down") == 0);
      link_down = true;
    }
    WriteRequest w{posted,   src.data(), 1024,   (*smr)->region().keys.lkey,
                   dst.addr, dst.rkey,   posted, posted % 8 == 0};
    if (p.client->post_writes({&w, 1}) == PostStatus::ok) {
      if (posted < 4000) ++posted;
    }
    size_t n = p.client->poll(buf);
    for (size_t i = 0; i < n; ++i)
      if (buf[i].status != WcStatus::success) seen = buf[i].status;
    if (!p.client->healthy() && seen == WcStatus::success) {
      // Failure noticed without a completion: the pending requests still complete.
      auto rest = reap(*p.client, 1);
      REQUIRE_FALSE(rest.empty());
      seen = rest[0].status;
    }
  }
  // The async event reader sees IBV_EVENT_PORT_ERR and the idle connection fails with it.
  for (int i = 0; i < 500 && idle.client->healthy(); ++i) {
    Completion c[4];
    (void)idle.client->poll(c);
    (void)idle.client->wait(std::chrono::milliseconds(20));
  }
  (void)std::system("ip link set veth0 up");
  CHECK(t->async_events().port_errors() > port_errors_before);
  CHECK_FALSE(idle.client->healthy());
  INFO("idle connection: " << idle.client->error().message());
  CHECK_THAT(idle.client->error().message(), Catch::Contains("IBV_EVENT_PORT_ERR"));
  INFO("first failed completion: " << to_string(seen));
  CHECK(link_down);
  CHECK(seen != WcStatus::success);
  CHECK_FALSE(p.client->healthy());
  INFO(p.client->error().message());
  CHECK_FALSE(p.client->error().message().empty());
  WriteRequest w{0, nullptr, 0, 0, dst.addr, dst.rkey, 0, true};
  CHECK(p.client->post_writes({&w, 1}) == PostStatus::disconnected);
}

}  // namespace rdmarepl::transport::verbs::test
