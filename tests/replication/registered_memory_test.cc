// The channel's registered memory comes from slab pools registered once, at create()
// (src/replication/channel_memory.h): a long run over the TCP transport with
// authenticated writes, large records, live knob changes (batch size, pool size, carriers)
// and a follower caught up from the leader's log leaves every channel's registration count
// where create() left it. Also the plan that sizes the pools.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <thread>

#include "batch_limits.h"
#include "channel_memory.h"
#include "loopback_options.h"
#include "loopback_transport.h"
#include "open_channel.h"
#include "rdmarepl/rdmarepl.h"
#include "test_store.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using replication::detail::ChannelMemory;
using replication::detail::MemoryPlan;
using test::MapStore;
using test::open;

namespace {

using Channel = ReplicationChannel<MapStore>;

ChannelOptions long_run_options() {
  ChannelOptions o = test::loopback_options();
  o.transport = TransportKind::tcp;
  o.shards = 2;
  o.max_value_bytes = 3 << 20;  // large records above the largest size class
  o.retain_bytes = 12 << 20;    // small enough that a follower away falls out of it
  o.zero_copy_pool_bytes = 0;
  o.pre_shared_key = "registered memory test key";  // tag buffers on both sides
  o.wal_segment_bytes = 4 << 20;
  o.ack_mode = AckMode::one;
  return o;
}

std::unique_ptr<Channel> open_follower(ChannelOptions o, MapStore& store, uint16_t port = 0) {
  o.role = Role::follower;
  o.node_id = "follower";
  o.listen = {"127.0.0.1", port};
  return open(o, store);
}

// `n` writes over 300 keys; every 250th value is 1 to 2 MiB (a large record, sent alone
// through the follower's large-record buffer), the rest `small` bytes; every 7th an erase.
void write_load(Channel& leader, MapStore& expected, int n, uint64_t seed, size_t small) {
  std::mt19937_64 rng(seed);
  std::vector<Ticket> last(leader.options().shards);
  for (int i = 0; i < n; ++i) {
    const std::string key = "key-" + std::to_string(rng() % 300);
    WriteResult w;
    if (i % 7 == 3) {
      expected.erase(key);
      w = leader.erase(key);
    } else {
      const size_t len = i % 250 == 0 ? (1 << 20) + rng() % (1 << 20) : small;
      std::string value(len, static_cast<char>('a' + rng() % 26));
      value += std::to_string(i);
      expected.put(key, value);
      w = leader.replicate(key, value);
    }
    REQUIRE(w.ok());
    last[w.ticket.shard] = w.ticket;
  }
  for (auto t : last)
    if (t.seq != 0) REQUIRE(leader.wait(t, 60s).ok());
}

void require_converged(Channel& leader, const MapStore& expected,
                       const std::vector<MapStore*>& stores) {
  auto st = leader.wait_all_acked(60s);
  INFO((st.ok() ? std::string() : st.error().message()));
  REQUIRE(st.ok());
  for (auto* s : stores) CHECK(s->digest() == expected.digest());
}

}  // namespace

TEST_CASE("no registration after create() through a long run with knob changes and catch-up",
          "[memory][concurrency]") {
  wal::test::TempDir ldir;
  const ChannelOptions o = long_run_options();
  MapStore f1store;
  auto f2store = std::make_unique<MapStore>();
  auto f1 = open_follower(o, f1store);
  auto f2 = open_follower(o, *f2store);
  const uint16_t p2 = f2->local_endpoint().port;
  ChannelOptions lo = o;
  lo.role = Role::leader;
  lo.node_id = "leader";
  lo.wal_dir = ldir.path();
  lo.peers = {{"127.0.0.1", f1->local_endpoint().port}, {"127.0.0.1", p2}};
  MapStore expected;
  auto leader = open(lo, expected);

  // Each channel's memory: a few arenas (the leader's local arena holds the windows, staging
  // buffers, write tags and zero padding; its remote one the ack targets and
  // acknowledgement-tag slots; the follower has one remote arena per buffer generation for
  // its rings and large-record buffers, and a local one for its acknowledgement tags).
  const uint64_t leader_regs = leader->metrics().memory_registrations;
  const uint64_t f1_regs = f1->metrics().memory_registrations;
  CHECK(leader_regs == 2);
  CHECK(f1_regs == 3);
  CHECK(f2->metrics().memory_registrations == 3);

  write_load(*leader, expected, 3000, 1, 600);
  require_converged(*leader, expected, {&f1store, f2store.get()});

  // Live knobs: smaller then larger batches, a smaller then the full window, one carrier
  // then two (the followers accept new connections and take tag buffers for them).
  tuning::Knobs k = leader->knobs();
  const tuning::Knobs initial = k;
  k.batch_bytes = 4 * 1024;
  k.pool_bytes = initial.pool_bytes / 2;
  k.shards = 1;
  REQUIRE(leader->apply_knobs(k).ok());
  write_load(*leader, expected, 2000, 2, 300);
  k.batch_bytes = 48 * 1024;  // under the ring's limit (a quarter of 256 KiB)
  k.pool_bytes = initial.pool_bytes;
  k.shards = 2;
  REQUIRE(leader->apply_knobs(k).ok());
  write_load(*leader, expected, 2000, 3, 2000);
  require_converged(*leader, expected, {&f1store, f2store.get()});
  CHECK(leader->knobs().batch_bytes == 48 * 1024);
  CHECK(leader->knobs().shards == 2);

  // Follower 2 goes away while far more than the window is written, and comes back with
  // an empty store: the log catches it up while the batch size changes again.
  f2.reset();
  write_load(*leader, expected, 3000, 4, 12000);
  f2store = std::make_unique<MapStore>();
  f2 = open_follower(o, *f2store, p2);
  const uint64_t f2_regs = f2->metrics().memory_registrations;
  CHECK(f2_regs == 3);
  k.batch_bytes = 32 * 1024;
  REQUIRE(leader->apply_knobs(k).ok());
  write_load(*leader, expected, 1000, 5, 800);
  require_converged(*leader, expected, {&f1store, f2store.get()});
  const MetricsSnapshot m = leader->metrics();
  CHECK(m.catchup_bytes > 1 << 20);  // the log, not the window, served most of it
  CHECK(m.reconnects > 0);
  CHECK(m.batches_sealed > 500);

  // Through all of it: no registration on any channel after its create().
  CHECK(m.memory_registrations == leader_regs);
  CHECK(f1->metrics().memory_registrations == f1_regs);
  CHECK(f2->metrics().memory_registrations == f2_regs);
}

TEST_CASE("the memory plan sizes one arena per pool that holds every buffer", "[memory]") {
  test::LoopbackTransport transport(std::make_shared<test::LoopbackFabric>());
  const auto remote = transport::Access::local_write | transport::Access::remote_write;
  MemoryPlan plan;
  plan.add(transport::Access::local_write, 3 << 20, 2);  // two runs of three chunks
  plan.add(transport::Access::local_write, 100, 5);      // five 128-byte chunks
  plan.add(remote, 64);
  const size_t local_bytes = plan.pool_bytes(0);
  CHECK(local_bytes >= (6u << 20) + 5 * 128);
  CHECK(local_bytes % memory::kMaxClassSize == 0);
  CHECK(plan.pool_bytes(1) == memory::kMaxClassSize);
  CHECK(MemoryPlan().pool_bytes(0) == 0);

  memory::Counters counters;
  auto created = ChannelMemory::create(transport, plan, &counters);
  REQUIRE(created.ok());
  ChannelMemory& mem = *created;
  CHECK(counters.registrations.load() == 2);
  CHECK(mem.arena_count() == 2);
  CHECK(plan.pool_bytes(2) == 0);  // no generation-1 pool planned
  {
    std::vector<replication::detail::RegisteredBuffer> taken;
    for (int i = 0; i < 2; ++i) {
      auto b = mem.take(3 << 20, transport::Access::local_write, "run");
      REQUIRE(b.ok());
      CHECK(b->size() == 3u << 20);
      b->data()[(3 << 20) - 1] = std::byte{1};  // every byte of it is usable
      taken.push_back(std::move(b).value());
    }
    for (int i = 0; i < 5; ++i) {
      auto b = mem.take(100, transport::Access::local_write, "chunk");
      REQUIRE(b.ok());
      // Zeroed, though the free chunk held its list hook and arena pointer.
      for (size_t at = 0; at < 100; ++at) REQUIRE(b->data()[at] == std::byte{0});
      taken.push_back(std::move(b).value());
    }
    auto a = mem.take(64, remote, "ack target");
    REQUIRE(a.ok());
    CHECK(a->lkey() != taken.front().lkey());  // the other arena
    CHECK(a->remote().rkey != 0);
    // What the plan did not list does not fit: a clear error, no registration.
    auto extra = mem.take(3 << 20, transport::Access::local_write, "unplanned buffer");
    REQUIRE_FALSE(extra.ok());
    CHECK_THAT(extra.error().message(), Catch::Contains("unplanned buffer"));
  }
  CHECK(counters.registrations.load() == 2);
}

TEST_CASE("the engines' plans hold what they take", "[memory]") {
  ChannelOptions o = long_run_options();
  o.shards = 4;
  o.peers = {{"127.0.0.1", 1}, {"127.0.0.1", 2}};
  o.wal_dir = "/nonexistent";  // plans the staging buffers
  const MemoryPlan leader = replication::detail::leader_memory_plan(o);
  const size_t windows = o.shards * o.retain_bytes;
  const size_t staging = o.shards * memory::large_chunks(replication::detail::max_batch_bytes(o)) *
                         memory::kMaxClassSize;
  CHECK(leader.pool_bytes(0) >= windows + staging);
  CHECK(leader.pool_bytes(0) <= windows + staging + (8u << 20));
  CHECK(leader.pool_bytes(1) <= 4u << 20);
  const MemoryPlan follower = replication::detail::follower_memory_plan(o);
  for (uint32_t g = 0; g < 2; ++g)  // a pool per generation
    CHECK(follower.pool_bytes(1 + g) >= o.shards * (o.ring_bytes + o.max_value_bytes));
  CHECK(follower.pool_bytes(0) > 0);  // the acknowledgement tags, with a key
  o.pre_shared_key.clear();
  CHECK(replication::detail::follower_memory_plan(o).pool_bytes(0) == 0);
}
