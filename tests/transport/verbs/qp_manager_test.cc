// The QP manager on Soft-RoCE: pooling and reuse of verbs connections, CQs resized with
// ibv_resize_cq (the device's cqe grows and shrinks with the share).
#include "transport/qp_manager_scenario.h"

#include "pair.h"

namespace rdmarepl::transport::verbs::test {

TEST_CASE("the QP manager pools verbs connections and resizes their CQs", "[verbs]") {
  auto t = make_transport();
  // Depth 128 on both queues: both CQs are created with 128 entries.
  rdmarepl::transport::testing::qp_manager_scenario(*t, 128);
}

TEST_CASE("a verbs connection's CQs follow resize_completions", "[verbs]") {
  auto t = make_transport();
  ConnectionOptions o;
  o.send_queue_depth = 64;
  o.recv_queue_depth = 32;
  std::vector<uint8_t> dst_bytes(4096), src_bytes(4096, 0x5a);
  auto dst = t->register_memory(dst_bytes.data(), dst_bytes.size(),
                                Access::local_write | Access::remote_write);
  REQUIRE(dst);
  auto src = t->register_memory(src_bytes.data(), src_bytes.size(), Access::local_write);
  REQUIRE(src);
  ConnectionOptions so = o;
  so.regions = {(*dst)->remote()};
  auto p = connect(*t, *t, so, o);
  auto& c = p.c();
  CHECK(c.send_cq()->cqe >= 64);
  auto grown = c.resize_completions(1000);
  REQUIRE(grown);
  CHECK(*grown);
  CHECK(c.send_cq()->cqe >= 1000);
  CHECK(c.recv_cq()->cqe >= 1000);
  CHECK(c.completion_entries() == 1000);
  // Back down: each CQ to its own floor (the queue depths), never below.
  auto shrunk = c.resize_completions(1);
  REQUIRE(shrunk);
  CHECK(*shrunk);
  CHECK(c.send_cq()->cqe >= 64);
  CHECK(c.send_cq()->cqe < 1000);
  CHECK(c.completion_entries() == 64);
  auto same = c.resize_completions(1);
  REQUIRE(same);
  CHECK_FALSE(*same);
  // Still usable after the resizes: a write with immediate goes through.
  REQUIRE(p.server->post_recvs(1, 9) == PostStatus::ok);
  const RemoteRegion r = p.client->peer().regions.at(0);
  WriteRequest w{7, src_bytes.data(), 100, (*src)->region().keys.lkey, r.addr, r.rkey, 42, true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);
  auto sent = reap(*p.client, 1);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].status == WcStatus::success);
  auto got = reap(*p.server, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0].imm == 42);
  CHECK(dst_bytes[99] == 0x5a);
}

}  // namespace rdmarepl::transport::verbs::test
