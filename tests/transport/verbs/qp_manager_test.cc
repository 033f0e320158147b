// The QP manager on Soft-RoCE: lazy creation, pooling across shard-count changes, CQ resizing.
#include <thread>

#include "pair.h"
#include "transport/verbs/qp_manager.h"

namespace rdmarepl::transport::verbs::test {

TEST_CASE("the QP manager connects lazily, pools retired shards and resizes CQs", "[verbs]") {
  auto t = make_transport();
  auto listener = t->listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(listener);
  std::vector<std::unique_ptr<Connection>> accepted;
  ConnectionOptions small;
  small.send_queue_depth = 128;
  small.recv_queue_depth = 128;
  small.connect_timeout = std::chrono::seconds(60);
  QpManager::Factory factory = [&](size_t shard) -> Result<std::unique_ptr<Connection>> {
    ConnectionOptions o = small;
    o.app_data = std::to_string(shard);
    std::thread acceptor([&] {
      auto c = (*listener)->accept(small, std::chrono::seconds(60));
      if (c) accepted.push_back(std::move(*c));
    });
    auto c = t->connect((*listener)->local_endpoint(), o);
    acceptor.join();
    return c;
  };
  QpManager m(factory, QpManagerOptions{1, 1024});
  REQUIRE(m.set_shard_count(4));
  CHECK(m.connected() == 0);  // lazy
  CHECK(m.connections_made() == 0);
  CHECK(m.cq_entries() == 256);

  auto s2 = m.shard(0);
  REQUIRE(s2);
  CHECK(m.connected() == 1);
  auto again = m.shard(0);
  REQUIRE(again);
  CHECK(*again == *s2);  // one QP per shard
  REQUIRE(m.shard(3));
  CHECK(m.connections_made() == 2);
  CHECK(accepted.size() == 2);
  CHECK(accepted[0]->peer().app_data == "0");
  CHECK(accepted[1]->peer().app_data == "3");
  auto* v = static_cast<VerbsConnection*>(*s2);
  CHECK(v->send_cq()->cqe >= 256);

  // Two shards: 3 retires into the pool (max_idle 1), 0 stays; CQs grow to 512.
  REQUIRE(m.set_shard_count(2));
  CHECK(m.idle() == 1);
  CHECK(m.cq_entries() == 512);
  CHECK(v->send_cq()->cqe >= 512);
  // Back to four: shard 3 reuses the pooled QP instead of connecting.
  REQUIRE(m.set_shard_count(4));
  REQUIRE(m.shard(3));
  CHECK(m.connections_made() == 2);
  CHECK(m.idle() == 0);
  // The CQ never shrinks below the queue depth.
  REQUIRE(m.set_shard_count(16));
  CHECK(m.cq_entries() == 64);
  CHECK(v->send_cq()->cqe >= 128);

  auto bad = m.shard(16);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::invalid_argument));
}

}  // namespace rdmarepl::transport::verbs::test
