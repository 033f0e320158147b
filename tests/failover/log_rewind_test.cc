// Cutting a member's channel log back to the fork with the new leader's history: a real
// channel writes the log, rewind_log() cuts it, and a channel reopened over it recovers
// exactly the records up to the cut.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "failover/log_rewind.h"
#include "rdmarepl/replication/channel.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/reader.h"

using namespace rdmarepl;

namespace {

struct MapStore {
  std::map<std::string, std::string> data;
  uint64_t applied = 0;
  void apply(const replication::Record& r) {
    data[std::string(r.key)] = std::string(r.value);
    ++applied;
  }
};

replication::ChannelOptions log_only_leader(const std::string& dir) {
  replication::ChannelOptions o;
  o.role = replication::Role::leader;
  o.transport = replication::TransportKind::tcp;
  o.ack_mode = replication::AckMode::none;  // no followers: the log is the point
  o.wal_dir = dir;
  o.shards = 1;
  o.polling = replication::PollingMode::blocking;
  o.max_value_bytes = 1024;
  o.ring_bytes = 1 << 20;
  o.retain_bytes = 1 << 20;
  o.zero_copy_pool_bytes = 0;
  return o;
}

// (first, last) seq of each logged batch, in log order.
std::vector<std::pair<uint64_t, uint64_t>> batches(const std::string& dir) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  auto reader = wal::LogReader::open(dir, nullptr);
  REQUIRE(reader.ok());
  wal::Frame f;
  for (;;) {
    auto more = reader->next(&f);
    REQUIRE(more.ok());
    if (!*more) break;
    replication::BatchView v;
    REQUIRE(replication::parse_batch(
                {reinterpret_cast<const std::byte*>(f.payload.data()), f.payload.size()}, v) ==
            replication::BatchError::ok);
    out.emplace_back(v.header.first_seq, v.header.first_seq + v.header.record_count - 1);
  }
  return out;
}

}  // namespace

TEST_CASE("rewind_log cuts a channel log back to a batch boundary, never inside a batch",
          "[failover][wal]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("rdmarepl-rewind-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    MapStore store;
    auto ch = replication::ReplicationChannel<MapStore>::create(log_only_leader(dir), store);
    REQUIRE(ch.ok());
    for (int i = 1; i <= 60; ++i) {
      REQUIRE((*ch)->replicate("k" + std::to_string(i), "v").ok());
      if (i % 3 == 0) (*ch)->flush();  // a batch now and then, of 1..3 records
    }
    (*ch)->flush();
  }
  const auto logged = batches(dir);
  REQUIRE(logged.size() > 5);
  REQUIRE(logged.back().second == 60);

  // A cut inside a batch of several records changes nothing.
  for (const auto& [first, last] : logged)
    if (last > first) {
      auto inside = failover::detail::rewind_log(dir, first);
      REQUIRE(inside.ok());
      CHECK_FALSE(*inside);
      CHECK(batches(dir).size() == logged.size());
      break;
    }
  // At the end of a batch in the middle of the log: a reopened channel holds that prefix.
  const uint64_t keep = logged[logged.size() / 2].second;
  auto cut = failover::detail::rewind_log(dir, keep);
  REQUIRE(cut.ok());
  CHECK(*cut);
  CHECK(batches(dir).back().second == keep);
  {
    MapStore store;
    auto ch = replication::ReplicationChannel<MapStore>::create(log_only_leader(dir), store);
    REQUIRE(ch.ok());
    CHECK((*ch)->last_seq(0) == keep);
    CHECK(store.data.size() == keep);
    CHECK(store.data.count("k" + std::to_string(keep)) == 1);
    CHECK(store.data.count("k" + std::to_string(keep + 1)) == 0);
    // Numbering goes on after the cut: the next write is the fork's seq.
    auto w = (*ch)->replicate("after", "v");
    REQUIRE(w.ok());
    CHECK(w.ticket.seq == keep + 1);
  }
  // Nothing above the end: nothing to do.
  auto none = failover::detail::rewind_log(dir, 1000);
  REQUIRE(none.ok());
  CHECK(*none);
  std::filesystem::remove_all(dir);
}
