// The leader's retained window (src/replication/retained_window.h): room by bytes, by
// descriptor slots and by the live limit; eviction only of what the leader allows; growth of
// the open batch in place; where a resuming follower continues.
#include "retained_window.h"

#include <catch2/catch.hpp>

#include <memory>

#include "channel_memory.h"
#include "loopback_transport.h"

using rdmarepl::replication::detail::BatchDesc;
using rdmarepl::replication::detail::ChannelMemory;
using rdmarepl::replication::detail::MemoryPlan;
using rdmarepl::replication::detail::RetainedWindow;
using Room = RetainedWindow::Room;

namespace {

// A transport and the registered memory windows are taken from (declared before a window,
// so that it outlives it).
struct Memory {
  rdmarepl::test::LoopbackTransport transport{std::make_shared<rdmarepl::test::LoopbackFabric>()};
  ChannelMemory memory;
  Memory() {
    MemoryPlan plan;
    plan.add(rdmarepl::transport::Access::local_write, 4096);
    auto m = ChannelMemory::create(transport, plan, nullptr);
    REQUIRE(m.ok());
    memory = std::move(m).value();
  }
};

RetainedWindow make_window(Memory& t, size_t bytes, size_t batches) {
  auto b = t.memory.take(bytes, rdmarepl::transport::Access::local_write, "window");
  REQUIRE(b.ok());
  return RetainedWindow(std::move(b).value(), batches);
}

// Places and pushes a batch of `len` bytes holding seqs first..first+count-1.
void add(RetainedWindow& w, uint64_t len, uint64_t first, uint32_t count) {
  const auto p = w.space().place(len);
  BatchDesc d;
  d.offset = p.offset;
  d.len = len;
  d.consumed = p.consumed;
  d.first_seq = first;
  d.count = count;
  w.push(d);
}

}  // namespace

TEST_CASE("the window evicts only what the leader allows, oldest first", "[window]") {
  Memory t;
  auto w = make_window(t, 1024, 64);
  const auto all = [](const BatchDesc&) { return true; };
  REQUIRE(w.make_room(400, 1024, all) == Room::ok);
  add(w, 400, 1, 4);
  REQUIRE(w.make_room(400, 1024, all) == Room::ok);
  add(w, 400, 5, 4);
  CHECK(w.first_bn() == 0);
  CHECK(w.end_bn() == 2);

  uint64_t kept_after = 4;  // seqs up to this may go
  const auto acked = [&](const BatchDesc& d) { return d.last_seq() <= kept_after; };
  // 224 bytes are left: a 400-byte batch needs the oldest evicted, which is allowed.
  CHECK(w.make_room(400, 1024, acked) == Room::evicted);
  CHECK(w.first_bn() == 1);
  add(w, 400, 9, 4);
  // Now the oldest (seqs 5..8) is not acknowledged: no room.
  CHECK(w.make_room(400, 1024, acked) == Room::stalled);
  CHECK(w.first_bn() == 1);
  kept_after = 8;
  CHECK(w.make_room(400, 1024, acked) == Room::evicted);
  CHECK(w.first_bn() == 2);
}

TEST_CASE("the live limit and the descriptor slots bound the window too", "[window]") {
  Memory t;
  auto w = make_window(t, 4096, 2);
  const auto all = [](const BatchDesc&) { return true; };
  const auto none = [](const BatchDesc&) { return false; };
  // An empty window takes an entry whatever the limit.
  REQUIRE(w.make_room(512, 256, none) == Room::ok);
  add(w, 512, 1, 1);
  // Over the limit: only eviction makes room.
  CHECK(w.make_room(256, 600, none) == Room::stalled);
  CHECK(w.make_room(64, 600, none) == Room::ok);
  add(w, 64, 2, 1);
  // Two descriptors in use of two: no slot although the bytes are free.
  CHECK(w.make_room(64, 4096, none) == Room::stalled);
  CHECK(w.make_room(64, 4096, all) == Room::evicted);
  CHECK(w.first_bn() == 1);
}

TEST_CASE("the open batch grows in place by evicting what stands after it", "[window]") {
  Memory t;
  auto w = make_window(t, 1000, 64);
  const auto all = [](const BatchDesc&) { return true; };
  const auto none = [](const BatchDesc&) { return false; };
  add(w, 400, 1, 1);  // [0, 400)
  add(w, 400, 2, 1);  // [400, 800)
  REQUIRE(w.evict_oldest(all));
  // The open batch (placed, not yet pushed): 300 bytes do not fit in [800, 1000), so it
  // wraps to [0, 300), right before the oldest batch at 400.
  REQUIRE(w.make_room(300, 1000, none) == Room::ok);
  CHECK(w.space().place(300).offset == 0);
  CHECK(w.extend_room(100, none));        // [300, 400) is free
  CHECK_FALSE(w.extend_room(150, none));  // the batch at 400 is in the way
  CHECK(w.first_bn() == 1);
  CHECK(w.extend_room(150, all));  // evicting it makes the room
  CHECK(w.first_bn() == 2);
  w.space().extend(150);
  // Nothing is left to evict: the open batch cannot grow past the window's free space.
  CHECK_FALSE(w.extend_room(400, all));
  CHECK(w.extend_room(350, none));
}

TEST_CASE("a resuming follower continues at the batch holding its next seq", "[window]") {
  Memory t;
  auto w = make_window(t, 4096, 64);
  const auto all = [](const BatchDesc&) { return true; };
  add(w, 256, 1, 10);   // seqs 1..10, bn 0
  add(w, 256, 11, 10);  // 11..20, bn 1
  add(w, 256, 21, 10);  // 21..30, bn 2
  CHECK(w.find_after(0) == 0u);
  CHECK(w.find_after(12) == 1u);  // mid-batch: the follower skips what it has
  CHECK(w.find_after(20) == 2u);
  CHECK(w.find_after(30) == std::nullopt);  // nothing after it is retained
  CHECK(w.first_seq(99) == 1);
  REQUIRE(w.evict_oldest(all));
  CHECK(w.find_after(0) == std::nullopt);  // seqs 1..10 are gone
  CHECK(w.first_after(0) == 1u);
  CHECK_FALSE(w.holds_next(1, 0));
  CHECK(w.find_after(10) == 1u);
  CHECK(w.first_seq(99) == 11);
}

TEST_CASE("bytes_after counts the retained batches a follower still lacks", "[window]") {
  Memory t;
  auto w = make_window(t, 4096, 64);
  const auto all = [](const BatchDesc&) { return true; };
  CHECK(w.bytes_after(0) == 0);       // empty
  for (uint64_t i = 0; i < 5; ++i) {  // batches of 100, 200, .. 500 bytes, 10 seqs each
    REQUIRE(w.make_room(100 * (i + 1), 4096, all) != Room::stalled);
    add(w, 100 * (i + 1), 1 + 10 * i, 10);
  }
  CHECK(w.bytes_after(0) == 1500);
  CHECK(w.bytes_after(5) == 1500);   // the first batch is only partly acknowledged
  CHECK(w.bytes_after(10) == 1400);  // boundaries: seq 10 ends the first batch
  CHECK(w.bytes_after(31) == 900);
  CHECK(w.bytes_after(49) == 500);
  CHECK(w.bytes_after(50) == 0);
  CHECK(w.bytes_after(1000) == 0);
  // After evicting the two oldest, a follower behind the window counts what is retained.
  const auto first_two = [](const BatchDesc& d) { return d.last_seq() <= 20; };
  while (w.evict_oldest(first_two)) {
  }
  CHECK(w.first_bn() == 2);
  CHECK(w.bytes_after(0) == 1200);
  CHECK(w.bytes_after(35) == 900);
}
