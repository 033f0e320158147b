#include "rdmarepl/transport/fault/fault_injecting_transport.h"

#include <catch2/catch.hpp>

#include <cstring>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/pair_util.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::fault;
using namespace rdmarepl::transport::testing;
using namespace std::chrono_literals;

namespace {

struct Env {
  FaultInjectingTransport t;
  std::vector<uint8_t> src = std::vector<uint8_t>(1 << 16);
  std::vector<uint8_t> dst = std::vector<uint8_t>(1 << 16, 0);
  std::unique_ptr<MemoryRegion> src_mr, dst_mr;
  Pair pair;
  std::vector<Completion> client, server;

  explicit Env(FaultPlan plan) : t(std::make_unique<tcp::TcpTransport>(), plan) {
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    src_mr = std::move(t.register_memory(src.data(), src.size(), Access::local_write).value());
    dst_mr = std::move(
        t.register_memory(dst.data(), dst.size(), Access::local_write | Access::remote_write)
            .value());
    ConnectionOptions co, so;
    co.node_id = "leader";
    so.node_id = "follower";
    so.regions = {dst_mr->remote()};
    pair = make_pair(t, co, so);
    REQUIRE(pair.server->post_recvs(256, 0) == PostStatus::ok);
  }
  WriteRequest write(uint64_t id, uint32_t len, uint64_t off, bool signaled = true) {
    WriteRequest w;
    w.wr_id = id;
    w.local_addr = src.data() + off;
    w.length = len;
    w.lkey = src_mr->region().keys.lkey;
    w.remote_addr = dst_mr->remote().addr + off;
    w.rkey = dst_mr->remote().rkey;
    w.imm = static_cast<uint32_t>(id);
    w.signaled = signaled;
    return w;
  }
  FaultInjectingConnection& faulty() {
    return dynamic_cast<FaultInjectingConnection&>(*pair.client);
  }
};

}  // namespace

TEST_CASE("fault: the connection drops after N writes, mid-batch", "[transport][fault]") {
  FaultPlan plan;
  plan.drop_after_writes = 5;
  plan.on_accept = false;
  Env env(plan);
  std::vector<WriteRequest> batch;
  for (uint64_t i = 0; i < 8; ++i) batch.push_back(env.write(i, 100, i * 100));
  REQUIRE(env.pair.client->post_writes(batch) == PostStatus::ok);
  REQUIRE(pump(env.pair, env.client, env.server, [&] { return env.client.size() == 8; }));
  for (size_t i = 0; i < 8; ++i) {
    CHECK(env.client[i].wr_id == i);
    if (i >= 5) CHECK(env.client[i].status == WcStatus::flushed);
  }
  CHECK(env.faulty().stats().dropped);
  CHECK(env.faulty().stats().writes_posted == 5);
  CHECK_FALSE(env.pair.client->healthy());
  CHECK(env.pair.client->error().message().find("after 5 writes") != std::string::npos);
  CHECK(env.pair.client->post_writes(batch) == PostStatus::disconnected);
  // The peer notices the dropped link and never sees more than five writes.
  REQUIRE(pump(env.pair, env.client, env.server, [&] { return !env.pair.server->healthy(); }));
  size_t placed = 0;
  for (const auto& c : env.server) placed += c.status == WcStatus::success;
  CHECK(placed <= 5);
}

TEST_CASE("fault: one byte of the chosen write's payload is corrupted", "[transport][fault]") {
  FaultPlan plan;
  plan.corrupt_write_index = 2;
  plan.on_accept = false;
  Env env(plan);
  auto src_before = crc32c::value(env.src.data(), env.src.size());
  std::vector<WriteRequest> batch = {env.write(1, 1000, 0), env.write(2, 1000, 1000),
                                     env.write(3, 1000, 2000)};
  REQUIRE(env.pair.client->post_writes(batch) == PostStatus::ok);
  REQUIRE(pump(env.pair, env.client, env.server,
               [&] { return env.client.size() == 3 && env.server.size() == 3; }));
  CHECK(std::memcmp(env.dst.data(), env.src.data(), 1000) == 0);
  CHECK(std::memcmp(env.dst.data() + 2000, env.src.data() + 2000, 1000) == 0);
  int differing = 0;
  for (size_t i = 1000; i < 2000; ++i) differing += env.dst[i] != env.src[i];
  CHECK(differing == 1);
  CHECK(crc32c::value(env.src.data(), env.src.size()) == src_before);  // caller's buffer intact
  CHECK(env.faulty().stats().writes_corrupted == 1);
  CHECK(env.pair.client->healthy());
}

TEST_CASE("fault: a chosen completion fails and the rest flush", "[transport][fault]") {
  FaultPlan plan;
  plan.fail_completion_index = 2;
  plan.fail_status = WcStatus::remote_operation_error;
  plan.on_accept = false;
  Env env(plan);
  std::vector<WriteRequest> batch;
  for (uint64_t i = 0; i < 4; ++i) batch.push_back(env.write(i, 10, i * 10));
  REQUIRE(env.pair.client->post_writes({batch.data(), 1}) == PostStatus::ok);
  REQUIRE(pump(env.pair, env.client, env.server, [&] { return env.client.size() == 1; }));
  REQUIRE(env.pair.client->post_writes(std::span(batch).subspan(1)) == PostStatus::ok);
  REQUIRE(pump(env.pair, env.client, env.server, [&] { return env.client.size() == 4; }));
  CHECK(env.client[0].status == WcStatus::success);
  CHECK(env.client[1].status == WcStatus::remote_operation_error);
  CHECK(env.client[2].status == WcStatus::flushed);
  CHECK(env.client[3].status == WcStatus::flushed);
  CHECK_FALSE(env.pair.client->healthy());
  CHECK(env.pair.client->error().message().find("IBV_WC_REM_OP_ERR") != std::string::npos);
}

TEST_CASE("fault: completions are held for the configured delay", "[transport][fault]") {
  FaultPlan plan;
  plan.completion_delay = 100ms;
  plan.post_delay = 20ms;
  plan.on_accept = false;
  Env env(plan);
  auto w = env.write(1, 10, 0);
  Stopwatch sw;
  REQUIRE(env.pair.client->post_writes({&w, 1}) == PostStatus::ok);
  REQUIRE(pump(env.pair, env.client, env.server, [&] { return env.client.size() == 1; }));
  // Lower bounds only: the delays are guaranteed minimums.
  CHECK(sw.elapsed_ns() >= 120'000'000u);
  CHECK(env.client[0].status == WcStatus::success);
}

TEST_CASE("fault: decisions are a function of the seed", "[transport][fault]") {
  auto run = [](uint64_t seed) {
    FaultPlan plan;
    plan.seed = seed;
    plan.corrupt_probability = 0.3;
    plan.on_accept = false;
    Env env(plan);
    for (uint64_t i = 0; i < 40; ++i) {
      auto w = env.write(i, 64, i * 64);
      REQUIRE(env.pair.client->post_writes({&w, 1}) == PostStatus::ok);
    }
    REQUIRE(pump(env.pair, env.client, env.server, [&] { return env.client.size() == 40; }));
    std::vector<int> corrupted;
    for (int i = 0; i < 40; ++i)
      if (std::memcmp(env.dst.data() + i * 64, env.src.data() + i * 64, 64) != 0)
        corrupted.push_back(i);
    CHECK(corrupted.size() == env.faulty().stats().writes_corrupted);
    return std::make_pair(corrupted, crc32c::value(env.dst.data(), 40 * 64));
  };
  auto a = run(7), b = run(7), c = run(8);
  CHECK(a == b);
  CHECK_FALSE(a.first.empty());
  CHECK(a != c);
}
