// A leader facing a follower that breaks the protocol: a peer that completes the handshake
// as a follower would (docs/wire_format.md, "Replication handshake") and then acknowledges
// records it was never sent. The leader must drop it with a logged reason and never count
// those records as committed.
#include <catch2/catch.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <thread>
#include <vector>

#include "log_capture.h"
#include "loopback_options.h"
#include "loopback_transport.h"
#include "rdmarepl/rdmarepl.h"
#include "replication/batch_limits.h"
#include "replication/hello.h"
#include "replication/imm.h"
#include "test_store.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LogCapture;
using test::LoopbackFabric;
using test::LoopbackTransport;

namespace {

// A follower written from the wire format alone: it registers the buffers a follower would,
// answers the handshake with resume point 0 for every shard, and then does only what the
// test asks.
class ForgedFollower {
 public:
  ForgedFollower(std::shared_ptr<LoopbackFabric> fabric, const ChannelOptions& o, uint16_t port)
      : transport_(std::move(fabric)), options_(o) {
    auto l = transport_.listen({"loopback", port});
    REQUIRE(l.ok());
    listener_ = std::move(l).value();
    const uint64_t large = replication::detail::large_buffer_bytes(o);
    // Rings of both generations, then large-record buffers of both generations.
    for (uint64_t size : {o.ring_bytes, o.ring_bytes, large, large}) {
      for (uint32_t s = 0; s < o.shards; ++s) {
        buffers_.emplace_back(size);
        auto r = transport_.register_memory(
            buffers_.back().data(), size,
            transport::Access::local_write | transport::Access::remote_write);
        REQUIRE(r.ok());
        regions_.push_back(std::move(r).value());
      }
    }
  }

  // Accepts one leader connection (of any shard).
  void accept(std::chrono::milliseconds timeout = 10s) {
    transport::ConnectionOptions co;
    co.node_id = "forged-follower";
    for (auto& r : regions_) co.regions.push_back(r->remote());
    co.send_queue_depth = co.recv_queue_depth = options_.queue_depth + 8;
    co.initial_recvs = options_.queue_depth + 4;
    replication::detail::FollowerHello h;
    h.shard_count = options_.shards;
    h.queue_depth = options_.queue_depth;
    h.ring_bytes = options_.ring_bytes;
    h.large_bytes = replication::detail::large_buffer_bytes(options_);
    h.applied.assign(options_.shards, 0);
    h.generation.assign(options_.shards, 0);
    co.app_data = replication::detail::encode(h);
    auto c = listener_->accept(co, timeout);
    REQUIRE(c.ok());
    conn_ = std::move(c).value();
  }

  void close() {
    conn_->close();
    conn_.reset();
  }

  // Acknowledges `seq` of shard 0 on the accepted connection.
  void ack(uint64_t seq) {
    transport::WriteRequest w;
    const auto& target = conn_->peer().regions.front();
    w.remote_addr = target.addr;
    w.rkey = target.rkey;
    w.imm = replication::make_imm(replication::ImmKind::ack, 0, static_cast<uint32_t>(seq));
    REQUIRE(conn_->post_writes(std::span<const transport::WriteRequest>(&w, 1)) ==
            transport::PostStatus::ok);
  }

 private:
  LoopbackTransport transport_;
  ChannelOptions options_;
  std::unique_ptr<transport::Listener> listener_;
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<std::unique_ptr<transport::MemoryRegion>> regions_;
  std::unique_ptr<transport::Connection> conn_;
};

// A one-shard leader named "leader" on the in-process fabric, writing to followers on
// loopback `ports`; each test sets its sizes and timeouts.
ChannelOptions leader_options(std::initializer_list<uint16_t> ports) {
  ChannelOptions o = test::loopback_options();
  o.shards = 1;
  o.role = Role::leader;
  o.node_id = "leader";
  for (uint16_t p : ports) o.peers.push_back({"loopback", p});
  return o;
}

std::unique_ptr<ReplicationChannel<test::MapStore>> open(
    const ChannelOptions& o, test::MapStore& store, const std::shared_ptr<LoopbackFabric>& fabric) {
  auto ch = ReplicationChannel<test::MapStore>::create(o, store,
                                                       std::make_unique<LoopbackTransport>(fabric));
  INFO((ch.ok() ? std::string() : ch.error().message()));
  REQUIRE(ch.ok());
  return std::move(ch).value();
}

// Waits up to `limit` for `done()`, polling; returns whether it became true.
template <class Done>
bool eventually(Done done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(2ms);
  return done();
}

}  // namespace

TEST_CASE("an acknowledgement of records never sent on the connection drops it",
          "[replication][adversarial]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = leader_options({32100});
  o.max_value_bytes = 4096;
  o.retain_bytes = 1 << 20;
  o.ack_mode = AckMode::all;
  o.flush_delay = 10s;  // the records stay in the open batch: assigned, never sent
  o.batch_bytes = 64 * 1024;
  ForgedFollower forged(fabric, o, 32100);

  LogCapture logs;
  test::MapStore store;
  auto leader = open(o, store, fabric);
  forged.accept();
  // The handshake is done on the follower's side; the leader installs the connection just
  // after. An acknowledgement is only judged on an installed connection.
  const auto up_by = std::chrono::steady_clock::now() + 10s;
  while (!leader->metrics().follower_connected[0] && std::chrono::steady_clock::now() < up_by)
    std::this_thread::sleep_for(2ms);
  REQUIRE(leader->metrics().follower_connected[0]);
  Ticket last;
  for (int i = 0; i < 10; ++i) {
    auto w = leader->replicate("k" + std::to_string(i), "v");
    REQUIRE(w.ok());
    last = w.ticket;
  }
  REQUIRE(last.seq == 10);
  forged.ack(10);  // within what the leader assigned, but nothing was sent yet

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!logs.contains("acknowledgement of seq 10") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  CHECK(logs.contains("protocol error: acknowledgement of seq 10", "last sent on this connection"));
  CHECK(leader->metrics().protocol_errors >= 1);
  CHECK_FALSE(leader->committed(last));
}

TEST_CASE("a follower that fails right after each handshake is retried ever more slowly",
          "[replication][adversarial]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = leader_options({32101});
  o.max_value_bytes = 4096;
  o.retain_bytes = 1 << 20;
  o.reconnect_interval = 10ms;
  o.reconnect_max_interval = 160ms;
  ForgedFollower forged(fabric, o, 32101);
  test::MapStore store;
  auto leader = open(o, store, fabric);
  // Each connection is closed as soon as it is up. Had a connect reset the backoff, the
  // leader would come back every reconnect_interval; it doubles the wait instead, up to the
  // cap. (The gaps are lower bounds: a slow machine only makes them longer.)
  std::vector<std::chrono::steady_clock::time_point> accepted;
  for (int i = 0; i < 7; ++i) {
    forged.accept();
    accepted.push_back(std::chrono::steady_clock::now());
    forged.close();
  }
  const auto gap = [&](size_t i) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(accepted[i] - accepted[i - 1]);
  };
  CHECK(gap(5) >= 100ms);
  CHECK(gap(6) >= 100ms);
}

TEST_CASE("a connected follower that never acknowledges does not stall the leader's writes",
          "[replication][adversarial]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = leader_options({32102, 32103});  // healthy, then one that never acknowledges
  o.max_value_bytes = 1024;
  o.retain_bytes = 256 * 1024;  // filled by a few hundred writes
  o.ack_mode = AckMode::one;    // the healthy follower suffices
  o.ack_timeout = 300ms;
  o.stall_timeout = 5s;
  test::MapStore fstore;
  auto fo = test::loopback_follower(o, 32102);
  fo.peers.clear();
  auto follower = open(fo, fstore, fabric);
  ForgedFollower silent(fabric, o, 32103);

  LogCapture logs;
  test::MapStore store;
  auto leader = open(o, store, fabric);
  silent.accept();
  // The handshake is done on the silent follower's side; the leader installs the connection
  // just after. Writes before that would move the window past the silent follower's resume
  // point (seq 1), and the leader would refuse it instead of waiting for it.
  REQUIRE(eventually([&] {
    const auto m = leader->metrics();
    return m.follower_connected[0] && m.follower_connected[1];
  }));
  // Many times the window: without the timeout the window fills with batches the silent
  // follower holds and replicate() stalls.
  const std::string value(900, 'v');
  Ticket last;
  for (int i = 0; i < 3000; ++i) {
    auto w = leader->replicate("k" + std::to_string(i % 50), value);
    INFO("write " << i << ": " << replication::describe(w.status));
    REQUIRE(w.ok());
    last = w.ticket;
  }
  REQUIRE(leader->wait(last, 10s).ok());
  CHECK(leader->metrics().ack_timeouts >= 1);
  // The control thread logs the dropped connection after the poller counted the timeout.
  CHECK(eventually([&] {
    return logs.contains("(loopback:32103): connection dropped: it acknowledged nothing for 300 ms",
                         "ChannelOptions::ack_timeout");
  }));
}

TEST_CASE("an idle spell longer than ack_timeout does not count against the next batch",
          "[replication][adversarial]") {
  auto fabric = std::make_shared<LoopbackFabric>();
  ChannelOptions o = leader_options({32104});
  o.max_value_bytes = 1024;
  o.retain_bytes = 256 * 1024;
  o.ack_mode = AckMode::all;
  o.ack_timeout = 1s;
  ForgedFollower forged(fabric, o, 32104);
  test::MapStore store;
  auto leader = open(o, store, fabric);
  forged.accept();
  REQUIRE(eventually([&] { return leader->metrics().follower_connected[0]; }));
  // Connected with nothing to acknowledge for longer than ack_timeout: it owes nothing yet.
  std::this_thread::sleep_for(o.ack_timeout + 300ms);
  auto w = leader->replicate("k", "v");
  REQUIRE(w.ok());
  REQUIRE(eventually([&] { return leader->metrics().batches_sent >= 1; }));
  // The batch has been in flight for a small part of ack_timeout: the follower still has
  // time to answer. Counted from the last answer (the install), the leader would drop it
  // at its next poll.
  std::this_thread::sleep_for(100ms);
  CHECK(leader->metrics().ack_timeouts == 0);
  REQUIRE(leader->metrics().follower_connected[0]);
  forged.ack(w.ticket.seq);
  CHECK(leader->wait(w.ticket, 10s).ok());
  CHECK(leader->metrics().ack_timeouts == 0);
  CHECK(leader->metrics().reconnects == 0);
}
