// Values in the store's own registered regions (register_region()): gathered from the
// store's mmap'd memory over TCP and the loopback fabric, anything else copied; the checks
// that refuse bad regions; idle release and registration again by the control thread; and
// unregister_region() waiting for the retained batches that reference a region.
#include <sys/mman.h>

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>

#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/rdmarepl.h"
#include "replication/transport_select.h"
#include "test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LoopbackFabric;
using test::LoopbackTransport;
using test::MapStore;

namespace {

using Channel = ReplicationChannel<MapStore>;
constexpr size_t kPage = 4096;

// The store's arena: anonymous mmap'd memory, unmapped last (after the channels).
struct Mapping {
  explicit Mapping(size_t bytes) : size(bytes) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base = static_cast<char*>(p);
  }
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  // `len` bytes at `off`, filled with a pattern of `tag`.
  std::string_view fill(size_t off, size_t len, int tag) const {
    for (size_t i = 0; i < len; ++i) base[off + i] = static_cast<char>('a' + (tag + i / 97) % 26);
    return {base + off, len};
  }
  char* base = nullptr;
  size_t size;
};

ChannelOptions base_options() {
  ChannelOptions o = test::loopback_options();
  o.shards = 2;
  o.max_value_bytes = 1 << 20;
  o.retain_bytes = 8 << 20;
  o.zero_copy_pool_bytes = 0;  // the region path needs no pool
  return o;
}

std::unique_ptr<Channel> open(const ChannelOptions& o, MapStore& store,
                              const std::shared_ptr<LoopbackFabric>& fabric) {
  auto ch = fabric ? Channel::create(o, store, std::make_unique<LoopbackTransport>(fabric))
                   : Channel::create(o, store);
  INFO((ch.ok() ? std::string() : ch.error().message()));
  REQUIRE(ch.ok());
  return std::move(ch).value();
}

// A follower and a leader over TCP on 127.0.0.1 (`fabric` null) or the loopback fabric.
struct Pair {
  std::shared_ptr<LoopbackFabric> fabric;
  MapStore fstore, lstore, expected;
  std::unique_ptr<Channel> follower, leader;

  // `kind` automatic: the loopback fabric on `port`; tcp or verbs: 127.0.0.1.
  Pair(ChannelOptions o, TransportKind kind, uint16_t port, test::WriteHook hook = {}) {
    const bool tcp = kind != TransportKind::automatic;
    if (!tcp) {
      fabric = std::make_shared<LoopbackFabric>();
      fabric->leader_hook = std::move(hook);
    }
    auto fo = test::loopback_follower(o, port);
    if (tcp) {
      fo.transport = o.transport = kind;
      fo.listen = {"127.0.0.1", 0};
    }
    follower = open(fo, fstore, fabric);
    o.role = Role::leader;
    o.peers = {{tcp ? "127.0.0.1" : "loopback", follower->local_endpoint().port}};
    if (!tcp) o.peers[0].port = port;
    leader = open(o, lstore, fabric);
  }
  WriteResult put(const std::string& key, std::string_view value) {
    expected.put(key, std::string(value));
    return leader->replicate(key, value);
  }
  void require_converged() {
    auto st = leader->wait_all_acked(30s);
    INFO((st.ok() ? std::string() : st.error().message()));
    REQUIRE(st.ok());
    CHECK(fstore.digest() == expected.digest());
    // progress() evicts the acknowledged batches (unless the poller is at it right now).
    for (int i = 0; i < 5000 && leader->zero_copy_retained() != 0; ++i) {
      (void)leader->progress();
      std::this_thread::sleep_for(1ms);
    }
  }
};

bool has_message(const Status& st, std::string_view what) {
  return !st.ok() && st.error().message().find(what) != std::string::npos;
}

// The first 2 MiB are registered, the third is not. Values are appended, never overwritten
// while a retained batch may still reference them (the lifetime contract).
void gather_scenario(TransportKind kind) {
  Mapping arena(3 << 20);
  Pair p(base_options(), kind, 0);
  const uint64_t regs = p.leader->metrics().memory_registrations;
  REQUIRE(p.leader->register_region(arena.base, 2 << 20).ok());
  CHECK(p.leader->metrics().region_registrations == 1);

  int gathered = 0;
  size_t off = 0;
  for (int i = 0; i < 40; ++i) {  // 16 KiB and 64 KiB values inside the region
    const size_t len = i % 2 ? 16 * 1024 : 64 * 1024;
    off += static_cast<size_t>(i % 5);  // not aligned: any placement works
    REQUIRE(p.put("k" + std::to_string(i % 7), arena.fill(off, len, i)).ok());
    off += len;
    ++gathered;
  }
  REQUIRE(off < (2 << 20) - 32 * 1024);
  // Straddling the region's end, outside it, below the gather threshold: copied.
  REQUIRE(p.put("straddle", arena.fill((2 << 20) - 8192, 16 * 1024, 50)).ok());
  REQUIRE(p.put("outside", arena.fill((2 << 20) + 4096 * 4, 16 * 1024, 51)).ok());
  REQUIRE(p.put("small", arena.fill(off + 10, 1000, 52)).ok());
  REQUIRE(p.put("heap", std::string(20000, 'h')).ok());
  REQUIRE(p.leader->erase("k3").ok());
  p.expected.erase("k3");
  p.require_converged();

  const auto m = p.leader->metrics();
  CHECK(m.region_values_gathered == static_cast<uint64_t>(gathered));
  CHECK(m.region_cache_hits == static_cast<uint64_t>(gathered));
  CHECK(m.region_cache_misses == 0);
  CHECK(m.region_registrations == 1);
  CHECK(m.memory_registrations == regs);  // the channel's own memory: all at create()
  CHECK(p.leader->region_references(arena.base) == 0);
  CHECK(p.leader->zero_copy_retained() == 0);

  REQUIRE(p.leader->unregister_region(arena.base, 5s).ok());
  // No longer registered: copied, and not counted as a miss.
  REQUIRE(p.put("after", arena.fill(0, 16 * 1024, 53)).ok());
  p.require_converged();
  CHECK(p.leader->metrics().region_values_gathered == static_cast<uint64_t>(gathered));
  CHECK(p.leader->metrics().region_cache_misses == 0);
}

}  // namespace

TEST_CASE("values in a registered region are gathered over TCP, others are copied", "[region]") {
  gather_scenario(TransportKind::tcp);
}

// Hidden: needs an RDMA device; run inside the Soft-RoCE VM by the rxe test
// rxe_zero_copy_verbs (tests/rxe/CMakeLists.txt).
TEST_CASE("values in a registered region are gathered over verbs", "[region][.verbs]") {
  if (auto t = replication::select_transport(TransportKind::verbs); !t.ok()) {
    WARN("skipped: " << t.error().message());
    return;
  }
  gather_scenario(TransportKind::verbs);
}

TEST_CASE("region values travel as gathered writes on the loopback fabric", "[region]") {
  Mapping arena(1 << 20);
  std::atomic<int> gathered_writes{0};
  Pair p(base_options(), TransportKind::automatic, 33000,
         [&](const transport::WriteRequest& wr, std::vector<std::byte>&) {
           if (wr.extra_count > 0) ++gathered_writes;
           return true;
         });
  REQUIRE(p.leader->register_region(arena.base, arena.size).ok());
  for (int i = 0; i < 10; ++i)
    REQUIRE(p.put("k" + std::to_string(i), arena.fill(i * 20000, 20000, i)).ok());
  p.require_converged();
  CHECK(gathered_writes == 10);  // one gathered write per value, none copied
  CHECK(p.leader->metrics().region_values_gathered == 10);
}

TEST_CASE("bad regions are refused with what to do", "[region]") {
  Mapping arena(16 * kPage);
  MapStore store;
  auto o = base_options();
  o.role = Role::leader;
  o.peers = {{"loopback", 33100}};  // never started
  auto leader = open(o, store, std::make_shared<LoopbackFabric>());

  auto st = leader->register_region(arena.base + 100, 4 * kPage);
  CHECK(st.error().is(Errc::misaligned));
  CHECK(has_message(st, "not aligned to 4096 B"));
  CHECK(has_message(st, "map the region with mmap"));
  st = leader->register_region(arena.base, 4 * kPage + 10);
  CHECK(st.error().is(Errc::misaligned));
  CHECK(has_message(st, "round it up"));

  // A hole in the middle of the range.
  REQUIRE(munmap(arena.base + 8 * kPage, kPage) == 0);
  st = leader->register_region(arena.base, 16 * kPage);
  CHECK(st.error().is(Errc::not_mapped));
  CHECK(has_message(st, "not mapped in this process"));
  CHECK(has_message(st, fmt::format("{}", static_cast<void*>(arena.base + 8 * kPage))));

  REQUIRE(leader->register_region(arena.base, 8 * kPage).ok());
  st = leader->register_region(arena.base + 4 * kPage, 2 * kPage);
  CHECK(st.error().is(Errc::already_exists));
  CHECK(has_message(st, "register disjoint ranges"));
  st = leader->unregister_region(arena.base + kPage, 1s);
  CHECK(st.error().is(Errc::not_found));
  CHECK(has_message(st, "pass the address given to register_region()"));
  CHECK(leader->metrics().region_registrations == 1);

  // A follower has no regions; the idle timeout is validated.
  MapStore fstore;
  auto follower = open(test::loopback_follower(base_options(), 33101), fstore,
                       std::make_shared<LoopbackFabric>());
  CHECK(follower->register_region(arena.base, kPage).error().is(Errc::unsupported));
  o.region_idle_timeout = 0ms;
  auto bad = Channel::create(
      o, store, std::make_unique<LoopbackTransport>(std::make_shared<LoopbackFabric>()));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("ChannelOptions::region_idle_timeout = 0 ms is out of "
                                   "range; use 10 ms") != std::string::npos);
}

TEST_CASE("an idle region is released, copied once, registered again and hit", "[region]") {
  Mapping arena(1 << 20);
  auto o = base_options();
  o.region_idle_timeout = 50ms;
  Pair p(o, TransportKind::automatic, 33200);
  REQUIRE(p.leader->register_region(arena.base, arena.size).ok());
  (void)p.leader->observe();  // the observation window starts here

  REQUIRE(p.put("a", arena.fill(0, 16 * 1024, 1)).ok());  // hit
  p.require_converged();
  CHECK(p.leader->region_references(arena.base) == 0);
  std::this_thread::sleep_for(400ms);  // idle: the control thread releases the registration

  REQUIRE(p.put("b", arena.fill(20000, 16 * 1024, 2)).ok());  // miss: copied
  CHECK(p.leader->metrics().region_cache_misses == 1);
  CHECK(p.leader->metrics().region_deregistrations == 1);  // the idle release
  CHECK(p.leader->metrics().region_values_gathered == 1);
  for (int i = 0; i < 500 && p.leader->metrics().region_registrations < 2; ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(p.leader->metrics().region_registrations == 2);  // registered again

  REQUIRE(p.put("c", arena.fill(40000, 16 * 1024, 3)).ok());  // hit again
  p.require_converged();
  const auto m = p.leader->metrics();
  CHECK(m.region_cache_hits == 2);
  CHECK(m.region_cache_misses == 1);
  CHECK(m.region_values_gathered == 2);
  CHECK(m.memory_registrations < 100);  // the region's registrations are counted apart

  // The tuner sees the hit rate of the window; a window without region values has none.
  const auto obs = p.leader->observe();
  REQUIRE(obs.reg_cache_hit_rate.has_value());
  CHECK(*obs.reg_cache_hit_rate == Approx(2.0 / 3.0));
  CHECK_FALSE(p.leader->observe().reg_cache_hit_rate.has_value());
  CHECK_FALSE(obs.membw_ratio.has_value());  // no memory bandwidth given
}

TEST_CASE("unregister_region waits for the retained batches that reference the region",
          "[region]") {
  Mapping arena(1 << 20);
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base_options();
  o.role = Role::leader;
  o.peers = {{"loopback", 33300}};  // the follower starts later
  MapStore lstore, fstore, expected;
  auto leader = open(o, lstore, fabric);
  REQUIRE(leader->register_region(arena.base, arena.size).ok());
  for (int i = 0; i < 5; ++i) {
    const auto v = arena.fill(i * 30000, 30000, i);
    expected.put("k" + std::to_string(i), std::string(v));
    REQUIRE(leader->replicate("k" + std::to_string(i), v).ok());
  }
  CHECK(leader->region_references(arena.base) == 5);

  // Nobody acknowledged them: the region cannot go yet.
  auto st = leader->unregister_region(arena.base, 100ms);
  CHECK(st.error().is(Errc::timeout));
  CHECK(has_message(st, "5 retained batches still reference the region"));
  CHECK(has_message(st, "wait_all_acked()"));
  // Retiring: new values are copied, the range cannot be registered again yet.
  const auto v = arena.fill(200000, 30000, 9);
  expected.put("late", std::string(v));
  REQUIRE(leader->replicate("late", v).ok());
  CHECK(leader->region_references(arena.base) == 5);
  CHECK(leader->register_region(arena.base, arena.size).error().is(Errc::busy));

  // The follower comes up and catches up from the window; then the region can go.
  auto follower = open(test::loopback_follower(base_options(), 33300), fstore, fabric);
  REQUIRE(leader->unregister_region(arena.base, 30s).ok());
  CHECK(leader->region_references(arena.base) == 0);
  REQUIRE(leader->wait_all_acked(30s).ok());
  CHECK(fstore.digest() == expected.digest());
  CHECK(leader->metrics().region_values_gathered == 5);
  REQUIRE(leader->register_region(arena.base, arena.size).ok());  // and again
}
