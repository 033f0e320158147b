// Write groups (replicate_group()) and the store's durable position (DurableStore) over the
// in-process loopback transport: a group reaches a follower whole (apply_group, never part
// of it visible to a reader), through reconnects, the follower's and the leader's logs and
// checkpoint shipping; the refusals at the call; a follower that restarts with its store
// intact resumes from the store's position, applying nothing twice and skipping nothing; a
// store that applies whole batches (apply_batch) gets the same guarantees.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "group_store.h"
#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::BatchMapStore;
using test::GroupMapStore;
using test::LoopbackFabric;
using test::LoopbackTransport;
using test::MapStore;
using wal::test::TempDir;

namespace {

using GChannel = ReplicationChannel<GroupMapStore>;
using BChannel = ReplicationChannel<BatchMapStore>;
using MChannel = ReplicationChannel<MapStore>;
constexpr uint32_t kShards = 3;
constexpr int kPairs = 40;
constexpr long kPairSum = 1000;

ChannelOptions base() {
  ChannelOptions o = test::loopback_options();
  o.shards = kShards;
  o.max_value_bytes = 64 * 1024;
  o.retain_bytes = 8 << 20;
  o.wal_segment_bytes = 1 << 20;
  return o;
}

ChannelOptions follower_at(uint16_t port, const std::string& wal = "", ChannelOptions o = base()) {
  o = test::loopback_follower(o, port);
  o.wal_dir = wal;
  if (wal.empty()) o.checkpoint_every_bytes = 0;
  return o;
}

ChannelOptions leader_to(std::vector<uint16_t> ports, const std::string& wal = "",
                         ChannelOptions o = base()) {
  o.role = Role::leader;
  o.node_id = "leader";
  o.wal_dir = wal;
  if (wal.empty()) o.checkpoint_every_bytes = 0;
  for (auto p : ports) o.peers.push_back({"loopback", p});
  return o;
}

template <class Ch, class St>
std::unique_ptr<Ch> open(const ChannelOptions& o, St& store,
                         const std::shared_ptr<LoopbackFabric>& fabric) {
  auto ch = Ch::create(o, store, std::make_unique<LoopbackTransport>(fabric));
  INFO((ch.ok() ? std::string() : ch.error().message()));
  REQUIRE(ch.ok());
  return std::move(ch).value();
}

// Pairs of keys of one shard each (a group's keys must share a shard), whose values always
// sum to kPairSum.
struct Pairs {
  std::vector<std::pair<std::string, std::string>> keys;
  std::vector<std::string> fillers;  // a third key of each pair's shard
  template <class Ch>
  explicit Pairs(const Ch& ch) {
    auto same_shard = [&](const std::string& a, const std::string& prefix) {
      for (int j = 0;; ++j)
        if (std::string k = prefix + std::to_string(j); ch.shard_of(k) == ch.shard_of(a)) return k;
    };
    for (int i = 0; i < kPairs; ++i) {
      std::string a = "a" + std::to_string(i);
      std::string b = same_shard(a, "b" + std::to_string(i) + "_");
      fillers.push_back(same_shard(a, "fill" + std::to_string(i) + "_"));
      keys.emplace_back(std::move(a), std::move(b));
    }
  }
  // True when every pair is absent, or present with values summing to kPairSum.
  [[nodiscard]] bool intact(const std::map<std::string, std::string>& m) const {
    for (const auto& [a, b] : keys) {
      auto ia = m.find(a);
      auto ib = m.find(b);
      if (ia == m.end() && ib == m.end()) continue;
      if (ia == m.end() || ib == m.end()) return false;
      if (std::stol(ia->second) + std::stol(ib->second) != kPairSum) return false;
    }
    return true;
  }
};

// The workload: groups moving amounts within pairs (with a filler value so that batches fill
// up), single puts and erases of other keys, and single puts of pair keys' neighbours.
// Applies every write to `expected` first. Returns the number of groups and the last ticket
// of each shard.
template <class Ch>
uint64_t write_mix(Ch& leader, MapStore& expected, const Pairs& pairs, int rounds, uint64_t seed,
                   std::vector<Ticket>& last) {
  std::mt19937_64 rng(seed);
  last.assign(kShards, Ticket{});
  uint64_t groups = 0;
  const std::string filler(200, 'f');
  for (int i = 0; i < rounds; ++i) {
    const size_t p = rng() % pairs.keys.size();
    const auto& [a, b] = pairs.keys[p];
    const long x = static_cast<long>(rng() % kPairSum);
    const std::string va = std::to_string(x), vb = std::to_string(kPairSum - x);
    const std::string& fk = pairs.fillers[p];
    const replication::GroupOp ops[] = {
        {Op::put, a, va}, {Op::put, fk, filler}, {Op::erase, fk, {}}, {Op::put, b, vb}};
    expected.put(a, va);
    expected.put(b, vb);
    auto w = leader.replicate_group(ops);
    REQUIRE(w.ok());
    last[w.ticket.shard] = w.ticket;
    ++groups;
    const std::string single = "s" + std::to_string(rng() % 300);
    if (rng() % 4 == 0) {
      expected.erase(single);
      w = leader.erase(single);
    } else {
      const std::string v = filler + std::to_string(i);
      expected.put(single, v);
      w = leader.replicate(single, v);
    }
    REQUIRE(w.ok());
    last[w.ticket.shard] = w.ticket;
  }
  return groups;
}

template <class Ch>
void wait_all(Ch& leader, const std::vector<Ticket>& last) {
  for (auto t : last)
    if (t.seq != 0) {
      auto st = leader.wait(t, 30s);
      INFO((st.ok() ? std::string() : st.error().message()));
      REQUIRE(st.ok());
    }
}

// Checks the pair invariant on the follower's store until stopped; counts the checks and
// the broken ones.
struct Reader {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0}, broken{0};
  std::thread thread;
  Reader(const GroupMapStore& store, const Pairs& pairs) {
    thread = std::thread([this, &store, &pairs] {
      while (!stop.load()) {
        store.read([&](const auto& m) {
          if (!pairs.intact(m)) ++broken;
        });
        ++checks;
        std::this_thread::sleep_for(50us);
      }
    });
  }
  ~Reader() {
    stop = true;
    thread.join();
  }
};

}  // namespace

TEST_CASE("replicate_group refuses groups it cannot keep whole, with a reason",
          "[group][concurrency]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  GroupMapStore fstore(kShards);
  auto follower = open<GChannel>(follower_at(32000), fstore, fabric);
  MapStore lstore;
  auto leader = open<MChannel>(leader_to({32000}), lstore, fabric);

  std::string other;  // a key of another shard than "x"
  for (int j = 0; other.empty() || leader->shard_of(other) == leader->shard_of("x"); ++j)
    other = "y" + std::to_string(j);
  const replication::GroupOp spans[] = {{Op::put, "x", "1"}, {Op::put, other, "2"}};
  auto w = leader->replicate_group(spans);
  CHECK(w.status == WriteStatus::group_spans_shards);
  CHECK(replication::describe(w.status).find("shard_of") != std::string_view::npos);
  CHECK(leader->replicate_group({}).status == WriteStatus::bad_group_size);
  const std::string big(leader->group_limit_bytes(), 'v');
  const replication::GroupOp too_big[] = {{Op::put, "x", big}, {Op::erase, "x", {}}};
  CHECK(leader->replicate_group(too_big).status == WriteStatus::bad_group_size);
  const replication::GroupOp ok_ops[] = {{Op::put, "x", "1"}, {Op::erase, "x", {}}};
  CHECK(follower->replicate_group(ok_ops).status == WriteStatus::not_leader);
  // Nothing of a refused group was assigned a seq.
  for (uint32_t s = 0; s < kShards; ++s) CHECK(leader->last_seq(s) == 0);

  // A group of one is a single write; on_commit works for a group's ticket.
  w = leader->replicate_group(ok_ops);
  REQUIRE(w.ok());
  CHECK(w.ticket.seq == 2);
  auto fut = leader->commit_future(w.ticket);
  REQUIRE(fut.wait_for(30s) == std::future_status::ready);
  CHECK(fut.get().ok());
  CHECK(fstore.counter(&GroupMapStore::groups) == 1);
  CHECK(fstore.counter(&GroupMapStore::group_records) == 2);
}

TEST_CASE("write groups reach followers whole, through reconnects and their logs",
          "[group][concurrency]") {
  TempDir fdir;
  auto fabric = std::make_shared<LoopbackFabric>();
  auto store1 = std::make_unique<GroupMapStore>(kShards);
  auto f1 = open<GChannel>(follower_at(32100, fdir.path()), *store1, fabric);
  MapStore plain;  // a store without the group hook: records one by one, in order
  auto f2 = open<MChannel>(follower_at(32101), plain, fabric);
  MapStore expected;
  auto o = leader_to({32100, 32101});
  o.ack_mode = AckMode::all;
  auto leader = open<MChannel>(o, expected, fabric);
  const Pairs pairs(*leader);
  std::vector<Ticket> last;
  uint64_t groups = 0;
  {
    Reader reader(*store1, pairs);
    groups += write_mix(*leader, expected, pairs, 1500, 1, last);
    fabric->fail_all("test");  // every connection drops: batches are resent, duplicates skipped
    groups += write_mix(*leader, expected, pairs, 1500, 2, last);
    wait_all(*leader, last);
    REQUIRE(leader->wait_all_acked(30s).ok());
    CHECK(reader.checks.load() > 0);
    CHECK(reader.broken.load() == 0);
  }
  CHECK(store1->digest() == expected.digest());
  CHECK(plain.digest() == expected.digest());
  CHECK(store1->counter(&GroupMapStore::groups) == groups);
  CHECK(store1->counter(&GroupMapStore::duplicates) == 0);
  CHECK(store1->counter(&GroupMapStore::gaps) == 0);

  // The follower's log replays the groups whole into an empty store.
  f1.reset();
  store1 = std::make_unique<GroupMapStore>(kShards);
  f1 = open<GChannel>(follower_at(32100, fdir.path()), *store1, fabric);
  CHECK(store1->digest() == expected.digest());
  CHECK(store1->counter(&GroupMapStore::groups) == groups);
  CHECK(pairs.intact(store1->data));
}

TEST_CASE("a leader's log and checkpoints keep groups whole for a follower caught up later",
          "[group][concurrency]") {
  TempDir ldir;
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base();
  o.retain_bytes = 512 * 1024;  // the late follower falls out of the window
  o.ack_mode = AckMode::none;
  o.durability = replication::Durability::batch;
  o.checkpoint_every_bytes = 256 * 1024;
  MapStore expected;
  uint64_t groups = 0;
  std::vector<Ticket> last;
  {
    // The leader's store is `expected`: the application applies each write to it first.
    auto leader = open<MChannel>(leader_to({32200}, ldir.path(), o), expected, fabric);
    const Pairs pairs(*leader);
    for (int round = 0; round < 6; ++round) {
      groups += write_mix(*leader, expected, pairs, 1000, 10 + round, last);
      wait_all(*leader, last);
      std::this_thread::sleep_for(60ms);  // the checkpointer ticks every 50 ms
    }
  }
  // The leader restarts from its log (and checkpoint); a follower with an empty store joins.
  MapStore lstore;
  auto leader = open<MChannel>(leader_to({32200}, ldir.path(), o), lstore, fabric);
  CHECK(lstore.digest() == expected.digest());
  GroupMapStore fstore(kShards);
  const Pairs pairs(*leader);
  Reader reader(fstore, pairs);
  auto follower = open<GChannel>(follower_at(32200), fstore, fabric);
  // The restarted leader's store gets these writes: a checkpoint taken from now on
  // snapshots it, and may cover all of them.
  groups += write_mix(*leader, lstore, pairs, 500, 30, last);
  auto st = leader->wait_all_acked(60s);
  INFO((st.ok() ? std::string() : st.error().message()));
  REQUIRE(st.ok());
  CHECK(fstore.digest() == lstore.digest());
  CHECK(reader.broken.load() == 0);
  CHECK(follower->metrics().checkpoints_installed >= 1);
  // Whatever came after the checkpoint came as groups (none when a checkpoint taken after
  // the last write was shipped); the checkpoint set the position.
  CHECK(fstore.counter(&GroupMapStore::groups) <= groups);
  CHECK(fstore.counter(&GroupMapStore::duplicates) == 0);
  CHECK(fstore.counter(&GroupMapStore::gaps) == 0);
}

TEST_CASE("a follower resumes from its store's durable position: nothing twice, nothing skipped",
          "[durable][concurrency]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  GroupMapStore fstore(kShards);  // outlives the follower's channel, as a database on disk
  auto follower = open<GChannel>(follower_at(32300), fstore, fabric);
  MapStore expected;
  auto o = leader_to({32300});
  o.ack_mode = AckMode::all;
  auto leader = open<MChannel>(o, expected, fabric);
  const Pairs pairs(*leader);
  std::vector<Ticket> last;
  write_mix(*leader, expected, pairs, 800, 40, last);
  wait_all(*leader, last);
  const uint64_t applied = fstore.applied_count();

  follower.reset();  // the process stops; its database keeps data and position
  write_mix(*leader, expected, pairs, 800, 41, last);  // it misses these
  follower = open<GChannel>(follower_at(32300), fstore, fabric);
  for (uint32_t s = 0; s < kShards; ++s)
    CHECK(follower->applied_seq(s) == fstore.durable_seq(s));  // where it resumes
  wait_all(*leader, last);
  REQUIRE(leader->wait_all_acked(30s).ok());
  CHECK(fstore.digest() == expected.digest());
  // Exactly the records written while it was away were applied after the restart.
  uint64_t total = 0;
  for (uint32_t s = 0; s < kShards; ++s) total += leader->last_seq(s);
  CHECK(fstore.applied_count() == total);
  CHECK(fstore.applied_count() > applied);
  CHECK(fstore.counter(&GroupMapStore::duplicates) == 0);
  CHECK(fstore.counter(&GroupMapStore::gaps) == 0);
}

TEST_CASE("a store that applies whole batches gets each record once and groups whole",
          "[group][durable][concurrency]") {
  TempDir fdir;
  auto fabric = std::make_shared<LoopbackFabric>();
  auto fstore = std::make_unique<BatchMapStore>(kShards);
  auto follower = open<BChannel>(follower_at(32400, fdir.path()), *fstore, fabric);
  MapStore expected;
  auto o = leader_to({32400});
  o.ack_mode = AckMode::all;
  auto leader = open<MChannel>(o, expected, fabric);
  const Pairs pairs(*leader);
  std::vector<Ticket> last;
  {
    Reader reader(*fstore, pairs);
    write_mix(*leader, expected, pairs, 1500, 50, last);
    fabric->fail_all("test");  // batches are resent: their applied records are skipped
    write_mix(*leader, expected, pairs, 1500, 51, last);
    wait_all(*leader, last);
    REQUIRE(leader->wait_all_acked(30s).ok());
    CHECK(reader.checks.load() > 0);
    CHECK(reader.broken.load() == 0);
  }
  CHECK(fstore->digest() == expected.digest());
  uint64_t total = 0;
  for (uint32_t s = 0; s < kShards; ++s) total += leader->last_seq(s);
  // Every record came through apply_batch(), once, in batches of several records.
  CHECK(fstore->counter(&BatchMapStore::batch_records) == total);
  CHECK(fstore->applied_count() == total);
  CHECK(fstore->counter(&BatchMapStore::batches) * 4 < total);
  CHECK(fstore->counter(&BatchMapStore::groups) == 0);
  CHECK(fstore->counter(&BatchMapStore::batch_breaks) == 0);
  CHECK(fstore->counter(&BatchMapStore::duplicates) == 0);
  CHECK(fstore->counter(&BatchMapStore::gaps) == 0);

  // Restarted with its store intact, it resumes at the store's position (nothing twice);
  // replayed into an empty store, its log gives the same contents, batch by batch.
  follower.reset();
  write_mix(*leader, expected, pairs, 300, 52, last);
  follower = open<BChannel>(follower_at(32400, fdir.path()), *fstore, fabric);
  wait_all(*leader, last);
  REQUIRE(leader->wait_all_acked(30s).ok());
  CHECK(fstore->digest() == expected.digest());
  CHECK(fstore->counter(&BatchMapStore::duplicates) == 0);
  CHECK(fstore->counter(&BatchMapStore::gaps) == 0);
  follower.reset();
  auto replayed = std::make_unique<BatchMapStore>(kShards);
  follower = open<BChannel>(follower_at(32400, fdir.path()), *replayed, fabric);
  CHECK(replayed->digest() == expected.digest());
  CHECK(replayed->counter(&BatchMapStore::batches) > 0);
  CHECK(replayed->counter(&BatchMapStore::batch_breaks) == 0);
  CHECK(pairs.intact(replayed->data));
}

TEST_CASE("a leader's log replays only what its durable store does not hold",
          "[durable][concurrency]") {
  TempDir ldir;
  auto fabric = std::make_shared<LoopbackFabric>();
  auto o = base();
  o.ack_mode = AckMode::none;
  o.durability = replication::Durability::batch;
  MapStore expected;
  GroupMapStore lstore(kShards);
  std::vector<Ticket> last;
  {
    auto leader = open<GChannel>(leader_to({32400}, ldir.path(), o), lstore, fabric);
    const Pairs pairs(*leader);
    write_mix(*leader, expected, pairs, 600, 50, last);
    wait_all(*leader, last);
  }
  // A store that durably holds the first half of each shard (as a database written after
  // commit may lag its log): recovery applies the rest, once, and nothing before it.
  GroupMapStore partial(kShards);
  for (uint32_t s = 0; s < kShards; ++s) partial.position[s] = last[s].seq / 2;
  auto leader = open<GChannel>(leader_to({32402}, ldir.path(), o), partial, fabric);
  uint64_t want = 0;
  for (uint32_t s = 0; s < kShards; ++s) {
    CHECK(leader->last_seq(s) == last[s].seq);
    CHECK(partial.durable_seq(s) == last[s].seq);
    want += last[s].seq - last[s].seq / 2;
  }
  CHECK(partial.applied_count() == want);
  CHECK(partial.counter(&GroupMapStore::duplicates) == 0);
  CHECK(partial.counter(&GroupMapStore::gaps) == 0);
}
