// Connection set-up through RDMA CM (use_rdma_cm) on Soft-RoCE: ring descriptors travel in
// the CM private data; the data path is the same as with the TCP bootstrap.
#include <cstring>
#include <future>

#include "pair.h"

namespace rdmarepl::transport::verbs::test {
namespace {

std::string vm_address() {
  const char* a = std::getenv("RDMAREPL_RXE_ADDR");
  return a != nullptr ? a : "10.9.0.1";
}

}  // namespace

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

TEST_CASE("RDMA CM mode refuses what its private data cannot carry", "[verbs][cm]") {
  auto opts = vm_options();
  opts.use_rdma_cm = true;
  auto t = make_transport(opts);
  ConnectionOptions o;
  o.pre_shared_key = "secret";
  auto c = t->connect(Endpoint{vm_address(), 1}, o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().is(Errc::unsupported));
  CHECK_THAT(c.error().message(), Catch::Contains("use_rdma_cm=false"));
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
