// Live knobs: apply_knobs() limits and counting, a batch size raised while a follower is
// caught up from the leader's log, and a tuner that moves every knob at random every few
// milliseconds while several writers load the channel: every follower must apply every
// record of every key exactly once and in order.
#include <catch2/catch.hpp>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "log_capture.h"
#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/wal/reader.h"
#include "replication/transport_select.h"
#include "test_store.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LoopbackFabric;
using test::LoopbackTransport;
using test::MapStore;

namespace {

// A follower store that checks, per key, that the values it applies carry the counters
// 1, 2, 3, ... in order: a lost, duplicated or reordered record breaks the sequence.
struct OrderStore {
  std::mutex mu;
  std::map<std::string, uint64_t> last;  // key -> counter of the last applied value
  uint64_t applied = 0;
  uint64_t violations = 0;
  std::string first_violation;

  void apply(const replication::Record& r) {
    std::lock_guard lock(mu);
    ++applied;
    // The value starts with "<counter>:".
    uint64_t n = 0;
    const auto colon = r.value.find(':');
    const auto res = std::from_chars(r.value.data(), r.value.data() + colon, n);
    auto& prev = last[std::string(r.key)];
    if (colon == std::string_view::npos || res.ec != std::errc() || n != prev + 1) {
      if (violations++ == 0)
        first_violation =
            std::string(r.key) + ": got " + std::to_string(n) + " after " + std::to_string(prev);
    }
    prev = n;
  }
};

template <class S>
using Channel = ReplicationChannel<S>;

ChannelOptions base_options() {
  ChannelOptions o = test::loopback_options();
  o.shards = 4;
  o.max_value_bytes = 128 * 1024;
  o.retain_bytes = 4 << 20;
  o.ack_mode = AckMode::all;
  return o;
}

// Moves every knob to a random allowed value on each decision.
class RandomTuner final : public tuning::Tuner {
 public:
  RandomTuner(tuning::KnobBounds b, uint64_t seed) : b_(b), rng_(seed) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "random"; }
  tuning::Knobs decide(const tuning::Observation&) override {
    tuning::Knobs k;
    k.batch_bytes = pick(b_.batch_bytes);
    k.flush_delay_us = static_cast<uint32_t>(pick(b_.flush_delay_us));
    k.shards = static_cast<uint32_t>(pick(b_.shards));
    k.poll_mode = static_cast<tuning::PollingMode>(rng_() % tuning::kNumPollModes);
    k.poll_interval_us = static_cast<uint32_t>(pick(b_.poll_interval_us));
    k.pool_bytes = pick(b_.pool_bytes);
    return tuning::clamp(k, b_);
  }

 private:
  uint64_t pick(const tuning::KnobRange& r) {
    return r.min + (rng_() % ((r.max - r.min) / r.step + 1)) * r.step;
  }
  tuning::KnobBounds b_;
  std::mt19937_64 rng_;
};

tuning::KnobBounds test_bounds() {
  tuning::KnobBounds b;
  b.batch_bytes = {1024, 64 * 1024, 1024};
  b.flush_delay_us = {0, 500, 5};
  b.shards = {1, 6, 1};  // above the channel's 4 shards: the channel limits it
  b.poll_interval_us = {1, 200, 1};
  b.pool_bytes = {1 << 20, 16 << 20, 1 << 20};
  return b;
}

}  // namespace

TEST_CASE("apply_knobs limits the knobs to what the leader can do and counts changes", "[knobs]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base_options();
  MapStore fstore;
  o.role = Role::follower;
  o.listen = {"loopback", 31000};
  o.allow_unauthenticated = true;  // the in-process fabric
  auto follower = Channel<MapStore>::create(o, fstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(follower.ok());

  o.role = Role::leader;
  o.peers = {{"loopback", 31000}};
  MapStore lstore;
  auto leader = Channel<MapStore>::create(o, lstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(leader.ok());
  auto& ch = **leader;

  const tuning::Knobs start = ch.knobs();
  CHECK(start.batch_bytes == o.batch_bytes);
  CHECK(start.flush_delay_us == 100);
  CHECK(start.shards == 1);
  CHECK(start.poll_mode == tuning::PollingMode::sleep);
  CHECK(start.pool_bytes == uint64_t{o.shards} * o.retain_bytes);

  tuning::Knobs k = start;
  k.batch_bytes = 1 << 20;  // above ring_bytes / 4
  k.shards = 9;             // above the channel's shard count
  k.poll_mode = tuning::PollingMode::busy;
  k.poll_interval_us = 7;
  k.pool_bytes = 1;  // below what two batches and two of the largest records need
  REQUIRE(ch.apply_knobs(k).ok());
  const tuning::Knobs got = ch.knobs();
  CHECK(got.batch_bytes == o.ring_bytes / 4);
  CHECK(got.shards == o.shards);
  CHECK(got.poll_mode == tuning::PollingMode::busy);
  CHECK(got.poll_interval_us == 7);
  CHECK(got.pool_bytes > 1);
  CHECK(got.pool_bytes <= uint64_t{o.shards} * o.retain_bytes);
  auto m = ch.metrics();
  CHECK(m.knob_changes == 1);
  CHECK(m.worker_changes == 1);

  // The same knobs again change nothing.
  REQUIRE(ch.apply_knobs(k).ok());
  CHECK(ch.metrics().knob_changes == 1);

  // Writes flow with the smallest pool and one worker again.
  k.shards = 1;
  k.batch_bytes = 4096;
  REQUIRE(ch.apply_knobs(k).ok());
  CHECK(ch.knobs().shards == 1);
  CHECK(ch.metrics().worker_changes == 2);
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i % 97);
    const std::string value(static_cast<size_t>(i % 3000), 'v');
    REQUIRE(ch.replicate(key, value).ok());
    lstore.put(key, value);
  }
  REQUIRE(ch.wait_all_acked(30s).ok());
  CHECK(fstore.digest() == lstore.digest());

  // A follower applies only the polling knobs.
  tuning::Knobs fk = (*follower)->knobs();
  fk.batch_bytes = 8192;
  fk.shards = 3;
  fk.poll_mode = tuning::PollingMode::blocking;
  REQUIRE((*follower)->apply_knobs(fk).ok());
  CHECK((*follower)->knobs().batch_bytes == o.batch_bytes);
  CHECK((*follower)->knobs().shards == 1);
  CHECK((*follower)->knobs().poll_mode == tuning::PollingMode::blocking);

  ch.close();
  auto closed = ch.apply_knobs(start);
  REQUIRE_FALSE(closed.ok());
  CHECK(closed.error().message().find("closed") != std::string::npos);
}

TEST_CASE("a manual-polling leader keeps its polling mode, the QP knob sets its carriers",
          "[knobs]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base_options();
  o.polling = PollingMode::manual;
  o.role = Role::leader;
  o.ack_mode = AckMode::none;
  MapStore store;
  auto leader = Channel<MapStore>::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(leader.ok());
  tuning::Knobs k = (*leader)->knobs();
  k.shards = 3;
  k.poll_mode = tuning::PollingMode::blocking;
  k.flush_delay_us = 10;
  REQUIRE((*leader)->apply_knobs(k).ok());
  CHECK((*leader)->knobs().shards == 3);  // carriers per follower; no poller threads start
  CHECK((*leader)->metrics().carriers == 3);
  CHECK((*leader)->metrics().worker_changes == 0);
  CHECK((*leader)->knobs().poll_mode == tuning::PollingMode::busy);
  CHECK((*leader)->knobs().flush_delay_us == 10);
}

TEST_CASE("tuning options are checked at create()", "[knobs]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base_options();
  o.role = Role::follower;
  o.listen = {"loopback", 31010};
  o.allow_unauthenticated = true;  // the in-process fabric
  o.tuning.enabled = true;
  MapStore store;
  auto f = Channel<MapStore>::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message().find("follower") != std::string::npos);

  o.role = Role::leader;
  o.ack_mode = AckMode::none;
  o.tuning.tuner = "no-such-tuner";
  auto l = Channel<MapStore>::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().message().find("no-such-tuner") != std::string::npos);

  o.tuning.memory_bandwidth_bytes_per_s = -1;
  o.tuning.tuner = "static";
  auto neg = Channel<MapStore>::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE_FALSE(neg.ok());
  CHECK_THAT(neg.error().message(), Catch::Contains("memory_bandwidth_bytes_per_s = -1") &&
                                        Catch::Contains("0 when it is unknown"));

  o.tuning.memory_bandwidth_bytes_per_s = 0;
  auto s = Channel<MapStore>::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(s.ok());
  CHECK((*s)->tuner_stats().has_value());
}

TEST_CASE("the memory-bandwidth ratio follows the given bandwidth and the bytes replicated",
          "[knobs]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto fo = base_options();
  fo.role = Role::follower;
  fo.listen = {"loopback", 31020};
  fo.allow_unauthenticated = true;
  MapStore fstore, lstore;
  auto f = Channel<MapStore>::create(fo, fstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(f.ok());
  auto o = base_options();
  o.peers = {{"loopback", 31020}};
  o.tuning.memory_bandwidth_bytes_per_s = 1e6;  // 1 MB/s: every byte counts
  auto l = Channel<MapStore>::create(o, lstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(l.ok());
  (void)(*l)->observe();  // the window starts here
  for (int i = 0; i < 200; ++i) REQUIRE((*l)->replicate("k" + std::to_string(i), "v").ok());
  REQUIRE((*l)->wait_all_acked(10s).ok());
  const auto obs = (*l)->observe();
  REQUIRE(obs.membw_ratio.has_value());
  // No log: two touches per byte (the batch's write, the transport's read).
  CHECK(*obs.membw_ratio == Approx(obs.bytes_per_s * 2 / 1e6));
  CHECK(*obs.membw_ratio > 0);
}

TEST_CASE("a tuner moving every knob at random under load keeps every key's order",
          "[knobs][integration]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base_options();
  constexpr int kFollowers = 2;
  std::vector<std::unique_ptr<OrderStore>> fstores;
  std::vector<std::unique_ptr<Channel<OrderStore>>> followers;
  for (int i = 0; i < kFollowers; ++i) {
    auto fo = o;
    fo.role = Role::follower;
    fo.listen = {"loopback", static_cast<uint16_t>(31100 + i)};
    fo.allow_unauthenticated = true;  // the in-process fabric
    fstores.push_back(std::make_unique<OrderStore>());
    auto ch = Channel<OrderStore>::create(fo, *fstores.back(),
                                          std::make_unique<LoopbackTransport>(fabric));
    REQUIRE(ch.ok());
    followers.push_back(std::move(ch).value());
    o.peers.push_back({"loopback", static_cast<uint16_t>(31100 + i)});
  }
  o.role = Role::leader;
  o.tuning.enabled = true;
  o.tuning.period = 3ms;
  o.tuning.bounds = test_bounds();
  const auto bounds = o.tuning.bounds;
  o.tuning.make_tuner = [bounds] { return std::make_unique<RandomTuner>(bounds, 42); };
  MapStore lstore;
  auto leader = Channel<MapStore>::create(o, lstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(leader.ok());
  auto& ch = **leader;

  constexpr int kWriters = 4;
  constexpr int kPerWriter = 6000;
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  std::map<std::string, uint64_t> expected;  // key -> last counter, filled after the join
  std::vector<std::map<std::string, uint64_t>> per_writer(kWriters);
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + static_cast<uint64_t>(t));
      auto& counters = per_writer[static_cast<size_t>(t)];
      std::string value;
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string key = "w" + std::to_string(t) + ":" + std::to_string(rng() % 64);
        const uint64_t n = ++counters[key];
        // Mostly small values, some large enough to travel through the large-record buffer.
        const size_t pad = rng() % 100 == 0 ? 70000 + rng() % 20000 : rng() % 1500;
        value = std::to_string(n) + ":";
        value.append(pad, static_cast<char>('a' + n % 26));
        if (!ch.replicate(key, value).ok()) ++failures;
        if (i % 500 == 0) std::this_thread::sleep_for(1ms);  // let the tuner interleave
      }
    });
  }
  for (auto& w : writers) w.join();
  REQUIRE(failures == 0);
  for (auto& m : per_writer) expected.insert(m.begin(), m.end());

  auto st = ch.wait_all_acked(60s);
  INFO((st.ok() ? std::string() : st.error().message()));
  REQUIRE(st.ok());
  const auto stats = ch.tuner_stats();
  REQUIRE(stats.has_value());
  const auto m = ch.metrics();
  INFO("decisions " << stats->decisions << " knob changes " << m.knob_changes << " worker changes "
                    << m.worker_changes);
  CHECK(stats->changes > 5);
  CHECK(m.knob_changes > 5);
  CHECK(m.worker_changes > 0);
  CHECK(m.tuner_decisions >= stats->decisions);
  ch.close();

  for (int i = 0; i < kFollowers; ++i) {
    auto& fs = *fstores[static_cast<size_t>(i)];
    std::lock_guard lock(fs.mu);
    INFO("follower " << i << ": " << fs.first_violation);
    CHECK(fs.violations == 0);
    CHECK(fs.applied == uint64_t{kWriters} * kPerWriter);
    CHECK(fs.last == expected);
  }
}

namespace {

// A follower store that checks per-key order (OrderStore), keeps the data (MapStore, for the
// digest) and can hold its applier: while the gate is closed, apply() waits, so the follower
// acknowledges nothing and a leader catching it up waits with one batch in flight.
struct GatedStore {
  OrderStore order;
  MapStore map;
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  bool waited = false;  // apply() was called while the gate was closed

  void apply(const replication::Record& r) {
    {
      std::unique_lock lock(mu);
      if (!open) {
        waited = true;
        cv.notify_all();
        cv.wait(lock, [&] { return open; });
      }
    }
    order.apply(r);
    map.apply(r);
  }
  void set_open(bool o) {
    std::lock_guard lock(mu);
    open = o;
    cv.notify_all();
  }
  bool wait_waited(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return waited; });
  }
};

// Opens the gate on scope exit, so that a failed check never leaves the follower's applier
// (and with it the follower's close()) blocked.
struct GateOpener {
  GatedStore& store;
  ~GateOpener() { store.set_open(true); }
};

}  // namespace

// The larger batches are read back from the log and sent; every record arrives in order and
// catch-up ends.
TEST_CASE("a batch size raised while a follower is caught up from the log", "[knobs][durability]") {
  wal::test::TempDir ldir;
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = test::loopback_options();
  o.shards = 1;
  o.ring_bytes = 1 << 20;  // apply_knobs() may raise batch_bytes up to 256 KiB
  o.batch_bytes = 16 * 1024;
  o.max_value_bytes = 64 * 1024;
  o.retain_bytes = 1 << 20;  // the away follower falls out of the window quickly
  o.ack_mode = AckMode::one;
  o.durability = replication::Durability::batch;
  o.wal_segment_bytes = 4 << 20;
  auto fo = test::loopback_follower(o, 31200);
  auto follower = [&](uint16_t port, GatedStore& store) {
    fo.listen.port = port;
    auto f = Channel<GatedStore>::create(fo, store, std::make_unique<LoopbackTransport>(fabric));
    INFO((f.ok() ? std::string() : f.error().message()));
    REQUIRE(f.ok());
    return std::move(f).value();
  };
  auto f1store = std::make_unique<GatedStore>();
  auto f1 = follower(31200, *f1store);
  auto f2store = std::make_unique<GatedStore>();
  auto f2 = follower(31201, *f2store);
  auto lo = o;
  lo.role = Role::leader;
  lo.wal_dir = ldir.path();
  lo.peers = {{"loopback", 31200}, {"loopback", 31201}};
  MapStore expected;
  auto leader =
      Channel<MapStore>::create(lo, expected, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(leader.ok());
  auto& ch = **leader;

  std::map<std::string, uint64_t> counters;
  auto write = [&](const std::string& key, size_t pad) {
    const uint64_t n = ++counters[key];
    std::string value = std::to_string(n) + ":";
    value.append(pad, static_cast<char>('a' + n % 26));
    expected.put(key, value);
    const auto w = ch.replicate(key, value);
    REQUIRE(w.ok());
    return w.ticket;
  };
  for (int i = 0; i < 300; ++i) write("k" + std::to_string(i % 50), 400);
  REQUIRE(ch.wait_all_acked(30s).ok());

  // The second follower goes away while about 2 MiB are written (the window holds 1 MiB),
  // and comes back empty: it needs seq 1 on, which only the log holds.
  f2.reset();
  Ticket last{};
  for (int i = 0; i < 4000; ++i) last = write("k" + std::to_string(i % 50), 500);
  REQUIRE(ch.wait(last, 30s).ok());
  f2store = std::make_unique<GatedStore>();
  f2store->set_open(false);
  GateOpener opener{*f2store};
  f2 = follower(31201, *f2store);
  // Its first batch from the log arrived: catch-up is under way (and holds until the gate
  // opens).
  REQUIRE(f2store->wait_waited(30s));

  // Now larger batches: 256 KiB, sealed at the first record that reaches it, so with records
  // of 60 KB each batch holds five (about 300 KB), and the flush delay does not cut them
  // short. The window turns over again, so the first of them are read back from the log.
  tuning::Knobs k = ch.knobs();
  k.batch_bytes = o.ring_bytes / 4;
  k.flush_delay_us = 200'000;
  REQUIRE(ch.apply_knobs(k).ok());
  REQUIRE(ch.knobs().batch_bytes == o.ring_bytes / 4);
  for (int i = 0; i < 40; ++i) last = write("big" + std::to_string(i % 7), 60'000);
  for (int i = 0; i < 200; ++i) last = write("k" + std::to_string(i % 50), 500);
  REQUIRE(ch.wait(last, 30s).ok());
  // Still catching up, behind every large batch.
  REQUIRE(f2->applied_seq(0) < 4300);
  const uint64_t resent_before = ch.metrics().batches_resent;
  f2store->set_open(true);

  // Catch-up ends within a bounded time (it must not loop on a batch it cannot send).
  auto st = ch.wait_all_acked(30s);
  INFO((st.ok() ? std::string() : st.error().message()));
  REQUIRE(st.ok());
  CHECK(ch.metrics().batches_resent > resent_before);
  for (auto* fs : {f1store.get(), f2store.get()}) {
    std::lock_guard lock(fs->order.mu);
    INFO(fs->order.first_violation);
    CHECK(fs->order.violations == 0);
    CHECK(fs->order.applied == ch.last_seq(0));
    CHECK(fs->order.last == counters);
  }
  CHECK(f1store->map.digest() == expected.digest());
  CHECK(f2store->map.digest() == expected.digest());

  // The log does hold batches above the batch size the channel was created with plus a
  // quarter ring: the case a staging buffer sized from the created batch size missed.
  ch.close();
  auto reader = wal::LogReader::open(ldir.path(), nullptr);
  REQUIRE(reader.ok());
  size_t largest = 0;
  wal::Frame f;
  while (*reader->next(&f)) largest = std::max(largest, f.payload.size());
  CHECK(largest > o.batch_bytes + o.ring_bytes / 4);
}

// A log written under a larger ring holds batches larger than a leader restarted with a
// smaller one can send: the follower that needs them gets an error naming the fix, and
// catch-up does not retry the batch forever.
TEST_CASE("a logged batch larger than the options allow fails catch-up with a clear error",
          "[knobs][durability]") {
  wal::test::TempDir ldir;
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = test::loopback_options();
  o.shards = 1;
  o.ring_bytes = 1 << 20;
  o.batch_bytes = 16 * 1024;
  o.max_value_bytes = 64 * 1024;
  o.retain_bytes = 1 << 20;
  o.ack_mode = AckMode::none;  // the follower is not there yet
  o.durability = replication::Durability::batch;
  o.wal_segment_bytes = 4 << 20;
  auto lo = o;
  lo.role = Role::leader;
  lo.wal_dir = ldir.path();
  lo.peers = {{"loopback", 31210}};
  {
    MapStore store;
    auto leader = Channel<MapStore>::create(lo, store, std::make_unique<LoopbackTransport>(fabric));
    REQUIRE(leader.ok());
    auto& ch = **leader;
    tuning::Knobs k = ch.knobs();
    k.batch_bytes = o.ring_bytes / 4;  // batches of five 60 KB records, about 300 KB
    k.flush_delay_us = 200'000;
    REQUIRE(ch.apply_knobs(k).ok());
    Ticket last{};
    for (int i = 0; i < 40; ++i) {
      auto w = ch.replicate("big" + std::to_string(i), std::string(60'000, 'b'));
      REQUIRE(w.ok());
      last = w.ticket;
    }
    k.batch_bytes = o.batch_bytes;
    REQUIRE(ch.apply_knobs(k).ok());
    // Then more than the window: the large batches stay only in the log.
    for (int i = 0; i < 4000; ++i) {
      auto w = ch.replicate("k" + std::to_string(i % 50), std::string(500, 'k'));
      REQUIRE(w.ok());
      last = w.ticket;
    }
    REQUIRE(ch.wait(last, 30s).ok());
  }
  // Restarted with a quarter of the ring: its largest batch is the large-record buffer.
  lo.ring_bytes = o.ring_bytes / 4;
  lo.batch_bytes = 16 * 1024;
  test::LogCapture logs;
  MapStore lstore;
  auto leader = Channel<MapStore>::create(lo, lstore, std::make_unique<LoopbackTransport>(fabric));
  INFO((leader.ok() ? std::string() : leader.error().message()));
  REQUIRE(leader.ok());
  auto fo = test::loopback_follower(o, 31210);
  fo.ring_bytes = lo.ring_bytes;
  MapStore fstore;
  auto follower =
      Channel<MapStore>::create(fo, fstore, std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(follower.ok());
  const Deadline d = Deadline::after(20s);
  while (!logs.contains("the largest batch these options allow") && !d.expired())
    std::this_thread::sleep_for(10ms);
  CHECK(logs.contains("the largest batch these options allow",
                      "restart this leader with the "
                      "options that wrote the log"));
  CHECK((*follower)->applied_seq(0) == 0);
  CHECK(fstore.size() == 0);
}

// The QP-count knob: eight shards carried by N connections per follower, N moved up and
// down while two writers load the channel. Shards move between connections only with nothing
// in flight, so every record arrives once and in key order, no session restarts; connections
// left idle when N shrinks go to the QP manager's pool and are taken back from it when N
// grows, and the carriers' completion queues are resized as N changes.
namespace {

// `dwell`: how long each N holds; long enough for the control thread to connect the new
// carriers and for the shards to drain off the ones left idle (slower in the Soft-RoCE VM).
// `keyed`: with a pre-shared key every write carries a MAC under per-connection counters, so
// a pooled connection must come back to its own slot with its counters, or the follower
// refuses its next batch (auth_failures, a reconnect).
void carrier_scenario(TransportKind transport, std::chrono::milliseconds dwell, bool keyed) {
  ChannelOptions o = test::loopback_options();
  o.transport = transport;
  if (keyed) o.pre_shared_key = "carrier scenario key, 32 bytes or more";
  o.shards = 8;
  o.max_value_bytes = 4096;
  o.retain_bytes = 4 << 20;
  o.ack_mode = AckMode::all;
  auto fo = o;
  fo.role = Role::follower;
  fo.listen = {"127.0.0.1", 0};
  fo.allow_unauthenticated = true;  // only this process connects to it
  fo.node_id = "follower";
  GatedStore fstore;
  auto follower = Channel<GatedStore>::create(fo, fstore);
  INFO((follower.ok() ? std::string() : follower.error().message()));
  REQUIRE(follower.ok());
  auto lo = o;
  lo.role = Role::leader;
  lo.node_id = "leader";
  lo.peers = {(*follower)->local_endpoint()};
  MapStore lstore;
  auto leader = Channel<MapStore>::create(lo, lstore);
  INFO((leader.ok() ? std::string() : leader.error().message()));
  REQUIRE(leader.ok());
  auto& ch = **leader;

  constexpr int kWriters = 2;
  constexpr int kKeys = 64;  // per writer
  std::atomic<bool> stop{false};
  std::vector<std::map<std::string, uint64_t>> counters(kWriters);
  std::vector<std::map<std::string, std::string>> values(kWriters);
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const std::string key = "w" + std::to_string(w) + "k" + std::to_string(i % kKeys);
        const uint64_t n = ++counters[static_cast<size_t>(w)][key];
        std::string value = std::to_string(n) + ":";
        value.append(16 + i % 200, static_cast<char>('a' + n % 26));
        if (!ch.replicate(key, value).ok()) failures.fetch_add(1);
        values[static_cast<size_t>(w)][key] = std::move(value);
      }
    });
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t n : {4u, 8u, 2u, 6u, 1u, 3u, 8u, 1u}) {
    tuning::Knobs k = ch.knobs();
    k.shards = n;
    REQUIRE(ch.apply_knobs(k).ok());
    CHECK(ch.knobs().shards == n);
    CHECK(ch.metrics().carriers == n);
    std::this_thread::sleep_for(dwell);
  }
  stop = true;
  for (auto& t : writers) t.join();
  ch.flush();
  REQUIRE(ch.wait_all_acked(30s).ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<std::string, uint64_t> expected_last;
  std::map<std::string, std::string> expected_data;
  uint64_t total = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (const auto& [key, n] : counters[static_cast<size_t>(w)]) {
      expected_last[key] = n;
      total += n;
    }
    expected_data.insert(values[static_cast<size_t>(w)].begin(),
                         values[static_cast<size_t>(w)].end());
  }
  const auto m = ch.metrics();
  WARN("carriers over " << to_string(transport) << (keyed ? " with a key" : "") << ": " << total
                        << " records in " << secs << " s, " << m.carrier_moves << " shard moves, "
                        << m.qps_reused << " QPs reused from the pool, " << m.cq_resizes
                        << " CQ resizes");
  CHECK(failures == 0);
  {
    std::lock_guard lock(fstore.order.mu);
    INFO(fstore.order.first_violation);
    CHECK(fstore.order.violations == 0);
    CHECK(fstore.order.applied == total);
    CHECK(fstore.order.last == expected_last);
  }
  CHECK(fstore.map.digest() == MapStore::digest_of(expected_data));
  CHECK(m.reconnects == 0);  // moves never restarted the session
  CHECK(m.protocol_errors == 0);
  CHECK(m.carrier_moves >= 8);  // every shard moved at least once
  CHECK(m.qps_reused >= 1);     // 8 -> 2 pooled six carriers, 2 -> 6 took four back
  // Every change of N resizes the active carriers' completion queues (8 -> 2 grows carriers
  // 0 and 1 to four shards' worth), and pooling shrinks them back to their floor.
  CHECK(m.cq_resizes >= 2);
  CHECK((*follower)->metrics().protocol_errors == 0);
  CHECK(m.auth_failures == 0);
  CHECK((*follower)->metrics().auth_failures == 0);
}

}  // namespace

TEST_CASE("the QP knob moves shards between carriers under load over TCP", "[knobs][carriers]") {
  carrier_scenario(TransportKind::tcp, 150ms, false);
}

TEST_CASE("the QP knob moves shards between carriers under load over TCP with a key",
          "[knobs][carriers]") {
  carrier_scenario(TransportKind::tcp, 150ms, true);
}

// Hidden: needs an RDMA device; run inside the Soft-RoCE VM by the rxe test rxe_carriers_verbs
// (tests/rxe/CMakeLists.txt). Here the pooled connections are RC QPs and the resizes are
// ibv_resize_cq calls on their CQs, and every write carries a MAC inside the written bytes.
TEST_CASE("the QP knob moves shards between carriers under load over verbs",
          "[knobs][carriers][.verbs]") {
  auto t = replication::select_transport(TransportKind::verbs);
  INFO((t.ok() ? std::string() : t.error().message()));
  REQUIRE(t.ok());
  carrier_scenario(TransportKind::verbs, 1000ms, true);
}
