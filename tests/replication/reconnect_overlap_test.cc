// A leader that reconnects while the follower is still applying a batch of the old
// connection must not write into the bytes that batch is read from. The loopback transport
// places a write's bytes on the sender's thread at post time (as a NIC does), so without
// separate buffer generations per connection the resent batches land under the records the
// blocked Store::apply is reading: the store sees values that were never written, and TSan
// reports the race.
#include <catch2/catch.hpp>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/rdmarepl.h"
#include "test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LoopbackFabric;
using test::LoopbackTransport;

namespace {

// Record n is put("k<n>", value_of(n)): the value's length and every byte are functions of n
// (every `large_every`th one is larger than a quarter of the ring, so that it goes through
// the large-record buffer), and a value read from overwritten bytes is recognised.
struct Values {
  size_t small_len = 200;
  size_t large_len = 0;
  uint64_t large_every = 0;  // 0: no large records
  [[nodiscard]] std::string of(uint64_t n) const {
    const bool large = large_every != 0 && n % large_every == 0;
    std::string v((large ? large_len : small_len) + n % 97, '\0');
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('a' + (n * 7 + i) % 26);
    return v;
  }
};

// Checks every applied record against value_of(); apply of record `block_at` waits (on the
// follower's poller) until the test releases it, so that the leader reconnects meanwhile.
struct CheckingStore {
  Values values;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t block_at = UINT64_MAX;  // guarded by mu
  bool blocked = false;            // guarded by mu
  bool released = false;           // guarded by mu
  std::atomic<uint64_t> applied{0};
  std::atomic<uint64_t> corrupt{0};
  std::string first_corrupt;  // guarded by mu

  void check(const replication::Record& r) {
    uint64_t n = 0;
    const bool key_ok =
        r.key.size() > 1 && r.key[0] == 'k' &&
        std::from_chars(r.key.data() + 1, r.key.data() + r.key.size(), n).ec == std::errc{};
    if (key_ok && r.op == replication::Op::put && r.value == values.of(n)) return;
    ++corrupt;
    std::lock_guard lock(mu);
    if (first_corrupt.empty())
      first_corrupt = "seq " + std::to_string(r.seq) + " key of " + std::to_string(r.key.size()) +
                      " bytes, value of " + std::to_string(r.value.size()) + " bytes";
  }

  void apply(const replication::Record& r) {
    check(r);
    {
      std::unique_lock lock(mu);
      if (r.key == "k" + std::to_string(block_at)) {
        blocked = true;
        cv.notify_all();
        // Bounded: if the leader cannot reconnect meanwhile the attempt does not count.
        cv.wait_for(lock, 5s, [&] { return released; });
        blocked = false;
      }
    }
    check(r);  // the views point into the receive buffer: read them again after the wait
    ++applied;
  }

  void arm(uint64_t n) {
    std::lock_guard lock(mu);
    block_at = n;
    released = false;
  }
  bool wait_blocked(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return blocked; });
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    block_at = UINT64_MAX;
    cv.notify_all();
  }
};

// Streams bursts of records, blocks the follower inside apply of one of them, pulls the cable
// and lets the leader reconnect and resend while the apply is blocked.
void run(uint64_t large_every) {
  ChannelOptions o;
  o.shards = 1;
  o.ring_bytes = 64 * 1024;
  o.batch_bytes = 4 * 1024;
  o.max_value_bytes = 64 * 1024;
  o.retain_bytes = 16 << 20;
  o.queue_depth = 16;
  o.polling = PollingMode::sleep;
  o.poll_interval = 50us;
  o.reconnect_interval = 1ms;
  o.flush_delay = 50us;
  o.ack_mode = AckMode::all;

  auto fabric = std::make_shared<LoopbackFabric>();
  std::atomic<uint64_t> leader_writes{0};
  fabric->leader_hook = [&](const transport::WriteRequest&, std::vector<std::byte>& bytes) {
    if (!bytes.empty()) ++leader_writes;
    return true;
  };
  CheckingStore fstore;
  fstore.values.large_len = o.ring_bytes / 4 + 1000;
  fstore.values.large_every = large_every;
  auto follower = ReplicationChannel<CheckingStore>::create(
      test::loopback_follower(o, 31000), fstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(follower.ok());

  test::MapStore lstore;
  ChannelOptions lo = o;
  lo.role = Role::leader;
  lo.peers = {{"loopback", 31000}};
  auto leader = ReplicationChannel<test::MapStore>::create(
      lo, lstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(leader.ok());

  auto write = [&](uint64_t n) {
    REQUIRE((*leader)->replicate("k" + std::to_string(n), fstore.values.of(n)).ok());
  };

  uint64_t next = 0;
  int exercised = 0;
  int attempts = 0;
  const uint64_t burst = large_every != 0 ? 400 : 3000;
  while (exercised < 3 && attempts < 20) {
    ++attempts;
    // Block on a record in the middle of the burst: the ring (and the leader's retained
    // window) then hold batches before and after it.
    uint64_t target = next + burst / 2;
    if (large_every != 0) target += large_every - target % large_every;  // a large one
    fstore.arm(target);
    for (uint64_t i = 0; i < burst; ++i) write(next++);
    (*leader)->flush();
    REQUIRE(fstore.wait_blocked(10s));
    const uint64_t before = leader_writes.load();
    const uint64_t reconnects = (*leader)->metrics().reconnects;
    fabric->fail_all("test: the link went down");
    // The leader reconnects (when the follower's accept thread offers a handshake) and sends
    // again at once into the buffers that handshake named. After a large record it waits for
    // that batch's acknowledgement, so one write may be all there is: wait for it, then give
    // the writer time to finish placing the bytes (the hook runs just before).
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    auto resent = [&] {
      return (*leader)->metrics().reconnects > reconnects && leader_writes.load() > before;
    };
    while (std::chrono::steady_clock::now() < deadline && !resent())
      std::this_thread::sleep_for(1ms);
    if (resent()) {
      ++exercised;
      std::this_thread::sleep_for(50ms);
    }
    fstore.release();
    auto st = (*leader)->wait_all_acked(30s);
    INFO((st.ok() ? std::string() : st.error().message()));
    REQUIRE(st.ok());
  }
  INFO("attempts " << attempts << ", leader reconnected and wrote during the blocked apply in "
                   << exercised);
  {
    std::lock_guard lock(fstore.mu);
    INFO("first corrupt record: " << fstore.first_corrupt);
    CHECK(fstore.corrupt.load() == 0);
  }
  // The overlap must have happened, or this test proves nothing.
  REQUIRE(exercised >= 1);
  CHECK((*follower)->applied_seq(0) == next);
  CHECK((*leader)->metrics().reconnects >= static_cast<uint64_t>(exercised));
}

}  // namespace

TEST_CASE("a leader reconnecting while a ring batch is applied never overwrites it",
          "[channel][concurrency][fault]") {
  run(0);
}

TEST_CASE("a leader reconnecting while a large-record batch is applied never overwrites it",
          "[channel][concurrency][fault]") {
  run(7);
}
