// The replication engine over the in-process loopback transport: ordering, catch-up, bad
// batches and dropped connections, deterministic and fast enough to run under TSan.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "replication/transport_select.h"
#include "test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LoopbackFabric;
using test::LoopbackTransport;
using test::MapStore;

namespace {

using Channel = ReplicationChannel<MapStore>;

ChannelOptions base_options() {
  ChannelOptions o = test::loopback_options();
  o.shards = 3;
  o.max_value_bytes = 1 << 20;
  o.retain_bytes = 8 << 20;
  return o;
}

struct Follower {
  MapStore store;
  std::unique_ptr<Channel> channel;
};

std::unique_ptr<Follower> start_follower(const std::shared_ptr<LoopbackFabric>& fabric,
                                         ChannelOptions o, uint16_t port) {
  auto f = std::make_unique<Follower>();
  auto ch = Channel::create(test::loopback_follower(o, port), f->store,
                            std::make_unique<LoopbackTransport>(fabric));
  REQUIRE(ch.ok());
  f->channel = std::move(ch).value();
  return f;
}

struct Cluster {
  std::shared_ptr<LoopbackFabric> fabric = std::make_shared<LoopbackFabric>();
  std::vector<std::unique_ptr<Follower>> followers;
  MapStore leader_store;
  std::unique_ptr<Channel> leader;
  ChannelOptions options;

  explicit Cluster(ChannelOptions o, int n = 2) : options(o) {
    for (int i = 0; i < n; ++i) {
      followers.push_back(start_follower(fabric, o, static_cast<uint16_t>(30000 + i)));
      options.peers.push_back({"loopback", static_cast<uint16_t>(30000 + i)});
    }
  }
  void start_leader() {
    options.role = Role::leader;
    auto ch = Channel::create(options, leader_store, std::make_unique<LoopbackTransport>(fabric));
    REQUIRE(ch.ok());
    leader = std::move(ch).value();
  }
};

// Writes `count` records from `threads` writers, each on its own key range so that the
// expected final state is known; returns the last ticket of each writer.
std::vector<Ticket> write_load(Cluster& c, int threads, int count, uint64_t seed,
                               size_t max_value) {
  std::vector<std::thread> ts;
  std::vector<Ticket> last(static_cast<size_t>(threads));
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(t));
      for (int i = 0; i < count / threads; ++i) {
        std::string key = "t" + std::to_string(t) + ":" + std::to_string(rng() % 500);
        WriteResult w;
        if (rng() % 5 == 0) {
          w = c.leader->erase(key);
          c.leader_store.erase(key);
        } else {
          std::string value(rng() % (max_value + 1), static_cast<char>('a' + rng() % 26));
          w = c.leader->replicate(key, value);
          c.leader_store.put(key, value);
        }
        if (!w.ok()) ++failures;
        last[static_cast<size_t>(t)] = w.ticket;
      }
    });
  }
  for (auto& t : ts) t.join();
  REQUIRE(failures == 0);
  return last;
}

void require_converged(Cluster& c) {
  auto st = c.leader->wait_all_acked(30s);
  INFO((st.ok() ? std::string() : st.error().message()));
  auto lm = c.leader->metrics();
  INFO("leader: sealed " << lm.batches_sealed << " sent " << lm.batches_sent << " credit stalls "
                         << lm.credit_stalls << " window stalls " << lm.window_stalls
                         << " queue depth " << lm.queue_depth);
  std::string applied;
  for (auto& f : c.followers) {
    applied += " | batches " + std::to_string(f->channel->metrics().batches_applied) + " seqs";
    for (uint32_t s = 0; s < c.options.shards; ++s)
      applied += " " + std::to_string(f->channel->applied_seq(s)) + "/" +
                 std::to_string(c.leader->last_seq(s));
  }
  INFO("followers:" << applied);
  REQUIRE(st.ok());
  for (auto& f : c.followers) CHECK(f->store.digest() == c.leader_store.digest());
}

}  // namespace

TEST_CASE("leader and two followers converge under concurrent writers", "[channel][concurrency]") {
  for (auto mode : {AckMode::none, AckMode::one, AckMode::all, AckMode::quorum}) {
    INFO("ack mode " << static_cast<int>(mode));
    auto o = base_options();
    o.ack_mode = mode;
    Cluster c(o);
    c.start_leader();
    auto last = write_load(c, 4, 8000, 1, 2000);
    for (auto t : last) REQUIRE(c.leader->wait(t, 30s).ok());
    require_converged(c);
    auto m = c.leader->metrics();
    CHECK(m.records_replicated == 8000);
    CHECK(m.batches_sent >= 2 * m.batches_sealed);
    CHECK(m.ack_latency_ns.count == (mode == AckMode::none ? 0u : 8000u));
    for (auto& f : c.followers) CHECK(f->channel->metrics().records_applied == 8000);
  }
}

TEST_CASE("per-key order holds: the last write of a key wins everywhere",
          "[channel][concurrency]") {
  Cluster c(base_options());
  c.start_leader();
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        auto key = "k" + std::to_string(i % 10);
        auto w = c.leader->replicate(key, std::to_string(t) + ":" + std::to_string(i));
        REQUIRE(w.ok());
      }
    });
  for (auto& t : ts) t.join();
  REQUIRE(c.leader->wait_all_acked(30s).ok());
  // Every follower applied the same sequence per shard, so they agree with each other.
  CHECK(c.followers[0]->store.digest() == c.followers[1]->store.digest());
  for (uint32_t s = 0; s < c.options.shards; ++s)
    CHECK(c.followers[0]->channel->applied_seq(s) == c.leader->last_seq(s));
}

TEST_CASE("large values and large keys round-trip through the large-record buffer", "[channel]") {
  auto o = base_options();
  o.max_value_bytes = 16 << 20;
  o.retain_bytes = 40 << 20;
  Cluster c(o, 1);
  c.start_leader();
  std::string big(16 << 20, 'v');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  const std::string big_key(replication::kMaxKeyBytes, 'k');
  for (int round = 0; round < 3; ++round) {
    auto w1 = c.leader->replicate("big" + std::to_string(round), big);
    auto w2 = c.leader->replicate(big_key, "small" + std::to_string(round));
    auto w3 = c.leader->replicate("small", std::string(100, 's'));
    REQUIRE(w1.ok());
    REQUIRE(w2.ok());
    REQUIRE(w3.ok());
    c.leader_store.put("big" + std::to_string(round), big);
    c.leader_store.put(big_key, "small" + std::to_string(round));
    c.leader_store.put("small", std::string(100, 's'));
  }
  // 64 KiB keys are allowed; one byte more is refused on the data path, not thrown.
  CHECK(c.leader->replicate(std::string(replication::kMaxKeyBytes + 1, 'x'), "v").status ==
        WriteStatus::too_large);
  CHECK(c.leader->replicate("x", std::string((16 << 20) + 1, 'v')).status ==
        WriteStatus::too_large);
  require_converged(c);
}

TEST_CASE("a corrupted batch drops the connection, nothing of it is applied, the leader resends",
          "[channel][fault]") {
  auto o = base_options();
  Cluster c(o);
  std::atomic<int> writes{0};
  std::atomic<int> corrupted{0};
  c.fabric->leader_hook = [&](const transport::WriteRequest& wr, std::vector<std::byte>& bytes) {
    // Flip a payload byte of every 50th batch write (acks are zero-length).
    if (!bytes.empty() && ++writes % 50 == 0 && bytes.size() > 40) {
      bytes[bytes.size() / 2] ^= std::byte{0x20};
      ++corrupted;
    }
    (void)wr;
    return true;
  };
  c.start_leader();
  write_load(c, 2, 6000, 7, 3000);
  require_converged(c);
  CHECK(corrupted > 0);
  uint64_t protocol_errors = 0;
  for (auto& f : c.followers) protocol_errors += f->channel->metrics().protocol_errors;
  // Every detected error comes from a corrupted write (a clean batch never fails its
  // checksum: the leader never writes over ring space the follower has not read), but not
  // every corrupted write is checked: one posted on a connection the follower is already
  // dropping is flushed unread.
  CHECK(protocol_errors > 0);
  CHECK(protocol_errors <= static_cast<uint64_t>(corrupted.load()));
  CHECK(c.leader->metrics().reconnects > 0);
  // Exactly once: no follower applied a record twice.
  for (auto& f : c.followers) {
    uint64_t applied_seqs = 0;
    for (uint32_t s = 0; s < c.options.shards; ++s) applied_seqs += f->channel->applied_seq(s);
    CHECK(f->store.applied_count() == applied_seqs);
  }
}

TEST_CASE("a connection dropped mid-stream is re-established and caught up", "[channel][fault]") {
  Cluster c(base_options());
  std::atomic<int> writes{0};
  c.fabric->leader_hook = [&](const transport::WriteRequest&, std::vector<std::byte>& bytes) {
    return bytes.empty() || ++writes % 97 != 0;  // every 97th batch write kills the link
  };
  c.start_leader();
  auto last = write_load(c, 3, 6000, 11, 1000);
  for (auto t : last) REQUIRE(c.leader->wait(t, 30s).ok());
  require_converged(c);
  CHECK(c.leader->metrics().reconnects > 0);
  for (auto& f : c.followers) {
    uint64_t applied_seqs = 0;
    for (uint32_t s = 0; s < c.options.shards; ++s) applied_seqs += f->channel->applied_seq(s);
    CHECK(f->store.applied_count() == applied_seqs);
  }
}

TEST_CASE("every connection a follower accepts has receives posted before the leader writes",
          "[channel][fault]") {
  // A leader may send its first batch as soon as connect() returns; receives the follower
  // posts after accept() returns race that write. The fabric fails a write that finds no
  // receive (as verbs does once rnr_retry runs out) and counts connections whose acceptor
  // posted none in the handshake: both must stay at zero, over reconnects too.
  std::atomic<int> writes{0};  // outlives the cluster, whose threads call the hook
  Cluster c(base_options());
  c.fabric->rnr_fails = true;
  c.fabric->leader_hook = [&](const transport::WriteRequest&, std::vector<std::byte>& bytes) {
    return bytes.empty() || ++writes % 61 != 0;  // every 61st batch write kills the link
  };
  c.start_leader();
  auto last = write_load(c, 2, 3000, 21, 800);
  for (auto t : last) REQUIRE(c.leader->wait(t, 30s).ok());
  require_converged(c);
  CHECK(c.leader->metrics().reconnects > 0);
  CHECK(c.fabric->accepted_without_recvs.load() == 0);
  CHECK(c.fabric->rnr_errors.load() == 0);
}

TEST_CASE("a restarted follower is caught up from the retained window", "[channel][fault]") {
  Cluster c(base_options());
  c.start_leader();
  write_load(c, 2, 2000, 3, 500);
  REQUIRE(c.leader->wait_all_acked(30s).ok());
  // The follower process dies: its store is gone too, so it restarts from seq 0.
  c.followers[1].reset();
  write_load(c, 2, 2000, 4, 500);
  c.followers[1] = start_follower(c.fabric, c.options, 30001);
  require_converged(c);
  CHECK(c.leader->metrics().reconnects > 0);
}

// Polls the leader's metrics (published by its poller) until `done` holds or 10 s pass.
template <class Pred>
MetricsSnapshot metrics_when(Channel& leader, Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  MetricsSnapshot m = leader.metrics();
  while (!done(m) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    m = leader.metrics();
  }
  return m;
}

TEST_CASE("per-follower lag in records and bytes and per-shard seq and lag", "[channel]") {
  Cluster c(base_options());
  c.followers[1].reset();  // away from the start: it acknowledges nothing
  c.start_leader();
  write_load(c, 2, 1000, 5, 400);
  c.leader->flush();
  const auto lagging = metrics_when(*c.leader, [&](const MetricsSnapshot& m) {
    return m.follower_lag[0] == 0 && m.follower_lag[1] == m.records_replicated;
  });
  REQUIRE(lagging.records_replicated == 1000);
  CHECK(lagging.follower_lag[0] == 0);
  CHECK(lagging.follower_lag_bytes[0] == 0);
  CHECK(lagging.follower_lag[1] == 1000);
  // Every sealed batch is retained and unacknowledged by follower 1: its records' bytes plus
  // the batch headers and padding.
  CHECK(lagging.follower_lag_bytes[1] > lagging.bytes_replicated);
  CHECK(lagging.follower_lag_bytes[1] <= lagging.bytes_replicated + lagging.batches_sealed * 4096);
  REQUIRE(lagging.shard_seq.size() == 3);
  REQUIRE(lagging.shard_lag.size() == 3);
  uint64_t seqs = 0;
  for (uint32_t s = 0; s < 3; ++s) {
    CHECK(lagging.shard_seq[s] == c.leader->last_seq(s));
    CHECK(lagging.shard_lag[s] == lagging.shard_seq[s]);  // the slowest follower has none
    seqs += lagging.shard_seq[s];
  }
  CHECK(seqs == 1000);
  // Per shard: records and bytes replicated add up to the channel's; per follower and
  // shard: follower 0 has no lag, follower 1 lags each shard by all its records, and the
  // bytes add up to the follower's lag.
  REQUIRE(lagging.shard_records.size() == 3);
  REQUIRE(lagging.shard_bytes.size() == 3);
  REQUIRE(lagging.link_lag.size() == 6);
  REQUIRE(lagging.link_lag_bytes.size() == 6);
  uint64_t records = 0, bytes = 0, lag_bytes = 0;
  for (uint32_t s = 0; s < 3; ++s) {
    CHECK(lagging.shard_records[s] == lagging.shard_seq[s]);
    CHECK(lagging.link_lag[s * 2 + 0] == 0);
    CHECK(lagging.link_lag_bytes[s * 2 + 0] == 0);
    CHECK(lagging.link_lag[s * 2 + 1] == lagging.shard_seq[s]);
    CHECK(lagging.link_lag_bytes[s * 2 + 1] >= lagging.shard_bytes[s]);
    records += lagging.shard_records[s];
    bytes += lagging.shard_bytes[s];
    lag_bytes += lagging.link_lag_bytes[s * 2 + 1];
  }
  CHECK(records == lagging.records_replicated);
  CHECK(bytes == lagging.bytes_replicated);
  CHECK(lag_bytes == lagging.follower_lag_bytes[1]);

  c.followers[1] = start_follower(c.fabric, c.options, 30001);
  require_converged(c);
  const auto caught_up = metrics_when(*c.leader, [](const MetricsSnapshot& m) {
    uint64_t links = 0;
    for (size_t k = 0; k < m.link_lag.size(); ++k) links += m.link_lag[k] + m.link_lag_bytes[k];
    return m.follower_lag[1] == 0 && m.follower_lag_bytes[1] == 0 && links == 0;
  });
  for (size_t k = 0; k < caught_up.link_lag.size(); ++k) {
    CHECK(caught_up.link_lag[k] == 0);
    CHECK(caught_up.link_lag_bytes[k] == 0);
  }
  CHECK(caught_up.follower_lag[1] == 0);
  CHECK(caught_up.follower_lag_bytes[1] == 0);
  // Per link: batches, stalls and reconnects add up to the channel's, and both followers
  // were sent batches (follower 1 from the retained window once it came).
  REQUIRE(caught_up.link_batches_sent.size() == 6);
  REQUIRE(caught_up.link_credit_stalls.size() == 6);
  REQUIRE(caught_up.link_reconnects.size() == 6);
  uint64_t sent[2] = {0, 0}, stalls = 0, reconnects = 0;
  for (size_t k = 0; k < 6; ++k) {
    sent[k % 2] += caught_up.link_batches_sent[k];
    stalls += caught_up.link_credit_stalls[k];
    reconnects += caught_up.link_reconnects[k];
  }
  CHECK(sent[0] + sent[1] == caught_up.batches_sent);
  CHECK(sent[0] > 0);
  CHECK(sent[1] > 0);
  CHECK(stalls == caught_up.credit_stalls);
  CHECK(reconnects == caught_up.reconnects);
  for (uint32_t s = 0; s < 3; ++s) CHECK(caught_up.shard_lag[s] == 0);
  const auto fm = c.followers[1]->channel->metrics();
  CHECK(fm.shard_seq == caught_up.shard_seq);  // a follower reports the seqs it applied
  CHECK(fm.shard_lag.empty());
  CHECK(fm.link_lag.empty());
  // The follower applied every record of every shard once: the leader's per-shard counts.
  CHECK(fm.shard_records == caught_up.shard_records);
  CHECK(fm.shard_bytes == caught_up.shard_bytes);
  CHECK(fm.bytes_applied == caught_up.bytes_replicated);
}

TEST_CASE("commit latency, batches and window stalls per shard add up to the channel's",
          "[channel]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  Cluster c(o);
  c.start_leader();
  const auto last = write_load(c, 3, 3000, 9, 300);
  for (auto t : last) REQUIRE(c.leader->wait(t, 30s).ok());
  require_converged(c);
  // Every record's commit is timed once, on its shard, by a progress round after the ack.
  const auto m = metrics_when(*c.leader, [](const MetricsSnapshot& s) {
    uint64_t timed = 0;
    for (const auto& h : s.shard_ack_latency_ns) timed += h.count;
    return timed == 3000;
  });
  REQUIRE(m.records_replicated == 3000);
  REQUIRE(m.shard_ack_latency_ns.size() == 3);
  REQUIRE(m.shard_batches.size() == 3);
  REQUIRE(m.shard_window_stalls.size() == 3);
  metrics::Histogram::Snapshot sum;
  uint64_t batches = 0, stalls = 0;
  for (uint32_t s = 0; s < 3; ++s) {
    INFO("shard " << s);
    const auto& h = m.shard_ack_latency_ns[s];
    CHECK(h.count == m.shard_records[s]);  // a shard times its own records, and only those
    CHECK(h.count > 0);
    CHECK(h.max <= m.ack_latency_ns.max);
    sum.add(h);
    batches += m.shard_batches[s];
    stalls += m.shard_window_stalls[s];
  }
  CHECK(sum.count == 3000);
  CHECK(m.ack_latency_ns.count == 3000);
  CHECK(m.ack_latency_ns.sum == sum.sum);
  CHECK(m.ack_latency_ns.max == sum.max);
  CHECK(m.ack_latency_ns.buckets == sum.buckets);
  CHECK(batches == m.batches_sealed);
  CHECK(stalls == m.window_stalls);
  for (auto& f : c.followers) {
    const auto fm = f->channel->metrics();
    CHECK(fm.shard_ack_latency_ns.empty());  // commits are timed by the leader
    CHECK(fm.ack_latency_ns.count == 0);
    CHECK(fm.shard_window_stalls.empty());
    REQUIRE(fm.shard_batches.size() == 3);
    uint64_t applied = 0;
    for (uint32_t s = 0; s < 3; ++s) {
      CHECK(fm.shard_batches[s] > 0);
      applied += fm.shard_batches[s];
    }
    CHECK(applied == fm.batches_applied);
    // No reconnect: each batch sealed on a shard was applied once on that shard.
    CHECK(fm.shard_batches == m.shard_batches);
  }
}

TEST_CASE("ack=all with a follower away: wait fails after away_timeout, or waits", "[channel]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  o.away_policy = AwayPolicy::fail;
  o.away_timeout = 200ms;
  Cluster c(o);
  c.start_leader();
  auto w = c.leader->replicate("a", "1");
  REQUIRE(c.leader->wait(w.ticket, 10s).ok());
  c.followers[1]->channel->close();
  w = c.leader->replicate("a", "2");
  auto st = c.leader->wait(w.ticket, 10s);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::timeout));
  CHECK_THAT(st.error().message(), Catch::Contains("away_timeout") && Catch::Contains("30001"));
  // The same write meets ack=one: the other follower has it.
  CHECK(c.followers[0]->channel->applied_seq(w.ticket.shard) >= w.ticket.seq);
}

TEST_CASE("ack=all with away_policy=wait completes once the follower is back", "[channel]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  o.away_policy = AwayPolicy::wait;
  Cluster c(o);
  c.start_leader();
  c.followers[0].reset();
  auto w = c.leader->replicate("a", "1");
  c.leader_store.put("a", "1");
  auto st = c.leader->wait(w.ticket, 100ms);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::timeout));
  c.followers[0] = start_follower(c.fabric, c.options, 30000);
  REQUIRE(c.leader->wait(w.ticket, 30s).ok());
  require_converged(c);
}

TEST_CASE("a follower too far behind the retained window gets a clear error", "[channel]") {
  auto o = base_options();
  o.retain_bytes = 2 * replication::single_record_batch_size(replication::kMaxKeyBytes, 1 << 20) +
                   2 * o.batch_bytes;
  o.ack_mode = AckMode::one;
  Cluster c(o);
  c.start_leader();
  c.followers[1].reset();
  write_load(c, 1, 20000, 5, 2000);  // far more than the window holds
  REQUIRE(c.leader->wait_all_acked(200ms).error().is(Errc::timeout));
  // Follower 0 stays connected and converges; it may still be applying the tail (its
  // deliveries happen in its own poll rounds), so wait for it before comparing.
  auto caught_up = [&] {
    for (uint32_t s = 0; s < c.options.shards; ++s)
      if (c.followers[0]->channel->applied_seq(s) != c.leader->last_seq(s)) return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!caught_up() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  CHECK(caught_up());
  CHECK(c.followers[0]->store.digest() == c.leader_store.digest());
}

TEST_CASE("transport selection explains why verbs is unavailable", "[channel]") {
  auto t = replication::select_transport(TransportKind::verbs);
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().message(), Catch::Contains("verbs"));
}

TEST_CASE("every polling mode makes progress", "[channel]") {
  for (auto mode : {PollingMode::manual, PollingMode::busy, PollingMode::blocking}) {
    INFO("polling mode " << static_cast<int>(mode));
    auto o = base_options();
    o.polling = PollingMode::blocking;  // followers
    Cluster c(o);
    c.options.polling = mode;  // leader; with manual, wait() drives progress()
    c.start_leader();
    auto last = write_load(c, 2, 2000, 21, 500);
    for (auto t : last) REQUIRE(c.leader->wait(t, 30s).ok());
    require_converged(c);
  }
}

// ------------------------------------------------------------------ commit callbacks

TEST_CASE("on_commit and commit_future fire once each, after the write meets the ack mode",
          "[channel][callbacks][concurrency]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  Cluster c(o);
  c.start_leader();
  constexpr int kThreads = 3;
  constexpr int kWrites = 600;
  std::atomic<int> fired{0};
  std::atomic<int> early{0};  // fired before every follower had applied the write
  std::atomic<int> failed{0};
  struct Ctx {
    Cluster* c;
    std::atomic<int>* fired;
    std::atomic<int>* early;
    std::atomic<int>* failed;
  } ctx{&c, &fired, &early, &failed};
  auto raw = [](void* p, Ticket t, const Status& st) noexcept {
    auto* x = static_cast<Ctx*>(p);
    if (!st.ok()) ++*x->failed;
    for (auto& f : x->c->followers)
      if (f->channel->applied_seq(t.shard) < t.seq) ++*x->early;
    ++*x->fired;
  };
  std::vector<std::thread> writers;
  std::vector<std::future<Status>> futures[kThreads];
  std::atomic<int> refused{0};  // Catch2 assertions are not thread-safe: count, check later
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        auto w = c.leader->replicate("k" + std::to_string(t) + ":" + std::to_string(i % 50),
                                     std::string(static_cast<size_t>(i % 300), 'v'));
        if (!w.ok()) {
          ++refused;
          continue;
        }
        if (i % 3 == 0) {
          futures[t].push_back(c.leader->commit_future(w.ticket));
        } else if (i % 3 == 1) {
          if (!c.leader->on_commit(w.ticket, +raw, &ctx).ok()) ++refused;
        } else {
          auto st = c.leader->on_commit(w.ticket, [&fired, &failed](Ticket, const Status& s) {
            if (!s.ok()) ++failed;
            ++fired;
          });
          if (!st.ok()) ++refused;
        }
      }
    });
  for (auto& w : writers) w.join();
  REQUIRE(refused.load() == 0);
  for (auto& fs : futures)
    for (auto& f : fs) {
      REQUIRE(f.wait_for(30s) == std::future_status::ready);
      CHECK(f.get().ok());
    }
  const int expected = kThreads * (kWrites - (kWrites + 2) / 3);
  for (int i = 0; i < 3000 && fired.load() < expected; ++i) std::this_thread::sleep_for(10ms);
  CHECK(fired.load() == expected);
  CHECK(early.load() == 0);
  CHECK(failed.load() == 0);
}

TEST_CASE("on_commit: an already committed ticket runs at once, bad tickets are refused",
          "[channel][callbacks]") {
  auto o = base_options();
  o.ack_mode = AckMode::one;
  Cluster c(o);
  c.start_leader();
  auto w = c.leader->replicate("a", "1");
  REQUIRE(c.leader->wait(w.ticket, 10s).ok());
  bool ran = false;
  REQUIRE(
      c.leader
          ->on_commit(w.ticket, [&](Ticket t, const Status& st) { ran = st.ok() && t == w.ticket; })
          .ok());
  CHECK(ran);  // on the caller's thread, before on_commit returned
  auto bad = c.leader->on_commit(Ticket{99, 1}, [](Ticket, const Status&) {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::invalid_argument));
  auto on_follower = c.followers[0]->channel->on_commit(w.ticket, [](Ticket, const Status&) {});
  REQUIRE_FALSE(on_follower.ok());
  CHECK_THAT(on_follower.error().message(), Catch::Contains("leader"));
}

TEST_CASE("on_commit: a full callback table is refused with a clear error",
          "[channel][callbacks]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  o.shards = 1;
  o.max_pending_callbacks = 4;
  Cluster c(o);
  c.followers[0].reset();  // nothing can commit under ack=all
  c.start_leader();
  std::atomic<int> failed{0};
  auto count_failure = [&failed](Ticket, const Status& st) {
    if (!st.ok()) ++failed;
  };
  for (int i = 0; i < 4; ++i) {
    auto w = c.leader->replicate("a", std::to_string(i));
    REQUIRE(c.leader->on_commit(w.ticket, count_failure).ok());
  }
  auto w = c.leader->replicate("a", "x");
  auto full = c.leader->on_commit(w.ticket, count_failure);
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().is(Errc::busy));
  CHECK_THAT(full.error().message(), Catch::Contains("max_pending_callbacks"));
  // Closing the channel reports the four pending writes as failed, once each.
  c.leader->close();
  CHECK(failed.load() == 4);
}

TEST_CASE("on_commit with away_policy=fail reports the follower that stayed away",
          "[channel][callbacks]") {
  auto o = base_options();
  o.ack_mode = AckMode::all;
  o.away_policy = AwayPolicy::fail;
  o.away_timeout = 150ms;
  Cluster c(o);
  c.start_leader();
  c.followers[1]->channel->close();
  auto w = c.leader->replicate("a", "2");
  auto future = c.leader->commit_future(w.ticket);
  REQUIRE(future.wait_for(20s) == std::future_status::ready);
  Status st = future.get();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().is(Errc::timeout));
  CHECK_THAT(st.error().message(), Catch::Contains("30001"));
}

namespace {

// The names top -H, perf and gdb show for the channels' threads (src/core/thread_name.h).
std::multiset<std::string> thread_names() {
  std::multiset<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "comm");
    std::string name;
    if (std::getline(f, name)) names.insert(name);
  }
  return names;
}

}  // namespace

TEST_CASE("a channel's threads are named after its role and their work", "[channel]") {
  Cluster c(base_options(), 1);
  c.start_leader();
  REQUIRE(c.leader->replicate("k", "v").ok());
  REQUIRE(c.leader->wait_all_acked(30s).ok());
  const auto names = thread_names();
  INFO(fmt::format("threads: {}", fmt::join(names, ", ")));
  for (const char* expected : {"rrL-control", "rrL-poll0", "rrF-control", "rrF-poll0"})
    CHECK(names.count(expected) == 1);
}
