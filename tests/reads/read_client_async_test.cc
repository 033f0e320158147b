// ReadClient::get_async() and poll(): one thread keeps many gets in flight as an event loop,
// mixes with blocking callers on other threads, and every callback runs exactly once
// (docs/reads.md, "Gets without a thread each").
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "read_cluster.h"

using namespace rdmarepl;
using namespace rdmarepl::reads;
using namespace std::chrono_literals;
using test::ReadCluster;

namespace {

using test::read_key;
using test::read_value;

constexpr int kKeys = 500;

void load(ReadCluster& c) {
  for (int i = 0; i < kKeys; ++i) c.write(read_key(i), read_value(i));
  REQUIRE(c.leader->wait_all_acked(20s).ok());
}

// A closed loop of `depth` gets in flight on one thread: each callback checks its value and
// starts the next get from inside the callback, until `total` were started.
struct EventLoop {
  ReadClient& client;
  int depth;
  int total;
  std::vector<std::string> keys;  // one per slot: the bytes stay put until the callback
  int started = 0, answered = 0, wrong = 0, failed = 0;
  size_t max_in_flight = 0, in_flight = 0;
  std::string first_error;

  EventLoop(ReadClient& c, int d, int t)
      : client(c), depth(d), total(t), keys(static_cast<size_t>(d)) {}

  void start(int slot) {
    const int i = (started * 37) % kKeys;
    ++started;
    keys[static_cast<size_t>(slot)] = read_key(i);
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    Status st = client.get_async(
        keys[static_cast<size_t>(slot)], Consistency::any(), [this, slot, i](Result<ReadResult> r) {
          --in_flight;
          ++answered;
          if (!r.ok()) {
            if (first_error.empty()) first_error = r.error().message();
            ++failed;
          } else if (r->status != ReadStatus::found || r->value != read_value(i)) {
            ++wrong;
          }
          if (started < total) start(slot);
        });
    CHECK(st.ok());  // not REQUIRE: this runs inside callbacks too, which must not throw
  }
  void run() {
    for (int s = 0; s < depth && started < total; ++s) start(s);
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    while (answered < total && std::chrono::steady_clock::now() < give_up) client.poll(1ms);
  }
};

}  // namespace

TEST_CASE("reads: one thread keeps many gets in flight with get_async", "[reads]") {
  ReadCluster c(2);
  load(c);
  auto client = c.client();
  EventLoop loop(*client, 16, 3000);
  loop.run();
  INFO(loop.first_error);
  CHECK(loop.answered == 3000);
  CHECK(loop.failed == 0);
  CHECK(loop.wrong == 0);
  CHECK(loop.max_in_flight == 16);
  // The gets in flight shared messages: far fewer requests than gets, on both replicas.
  uint64_t served = 0;
  CHECK(test::eventually([&] {
    served = c.servers[0]->stats().keys + c.servers[1]->stats().keys;
    return served == 3000;
  }));
  const uint64_t r0 = c.servers[0]->stats().requests, r1 = c.servers[1]->stats().requests;
  INFO("requests " << r0 << " + " << r1 << " for 3000 gets");
  CHECK(r0 > 0);
  CHECK(r1 > 0);
  CHECK(r0 + r1 < 3000 / 2);
  // Nothing left: poll returns at once with nothing run.
  CHECK(client->poll(0us) == 0);
}

TEST_CASE("reads: get_async of many keys, missing keys, no keys and at_least", "[reads]") {
  ReadCluster c(2);
  load(c);
  auto client = c.client();
  const std::string k1 = read_key(1), k2 = read_key(2), absent = "absent";
  std::vector<std::string_view> ask{k1, absent, k2};
  int calls = 0;
  std::vector<ReadResult> got;
  REQUIRE(client
              ->get_async(ask, Consistency::any(),
                          [&](Result<std::vector<ReadResult>> r) {
                            ++calls;
                            if (r.ok()) got = std::move(*r);
                          })
              .ok());
  ask.clear();  // the span need not outlive the call, only the keys' bytes
  bool empty_answered = false;
  REQUIRE(client
              ->get_async(
                  std::span<const std::string_view>(), Consistency::any(),
                  [&](Result<std::vector<ReadResult>> r) { empty_answered = r.ok() && r->empty(); })
              .ok());
  // A ticket the replicas will not reach: answered "behind" after the wait.
  Ticket future{0, 1'000'000'000};
  ReadStatus behind_status = ReadStatus::found;
  uint64_t behind_by = 0;
  REQUIRE(client
              ->get_async(k1, Consistency::at_least(future, 50ms),
                          [&](Result<ReadResult> r) {
                            if (!r.ok()) return;
                            behind_status = r->status;
                            behind_by = r->behind_by;
                          })
              .ok());
  size_t ran = 0;
  for (int i = 0; i < 5000 && ran < 3; ++i) ran += client->poll(1ms);
  CHECK(ran == 3);
  CHECK(calls == 1);
  REQUIRE(got.size() == 3);
  CHECK(got[0].value == read_value(1));
  CHECK(got[1].status == ReadStatus::not_found);
  CHECK(got[2].value == read_value(2));
  CHECK(empty_answered);
  CHECK(behind_status == ReadStatus::behind);
  CHECK(behind_by > 0);
  // Consistency::leader without a leader is refused at once, nothing queued.
  bool called = false;
  Status st =
      client->get_async(k1, Consistency::leader(), [&](Result<ReadResult>) { called = true; });
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code() == Errc::invalid_argument);
  CHECK(client->poll(0us) == 0);
  CHECK_FALSE(called);
}

TEST_CASE("reads: a get_async callback may not block in get(), nor poll again", "[reads]") {
  ReadCluster c(1);
  load(c);
  auto client = c.client();
  const std::string k = read_key(3);
  Status inner = ok_status();
  size_t inner_poll = 99;
  REQUIRE(client
              ->get_async(k, Consistency::any(),
                          [&](Result<ReadResult> r) {
                            CHECK(r.ok());
                            auto again = client->get(k);
                            inner = again.ok() ? ok_status() : Status(std::move(again).error());
                            inner_poll = client->poll(1ms);
                          })
              .ok());
  for (int i = 0; i < 5000 && client->poll(1ms) == 0; ++i) {
  }
  REQUIRE_FALSE(inner.ok());
  CHECK(inner.error().code() == Errc::invalid_argument);
  CHECK_THAT(inner.error().message(), Catch::Contains("get_async"));
  CHECK(inner_poll == 0);
  // Outside a callback the same thread may block in get().
  auto r = client->get(k);
  REQUIRE(r.ok());
  CHECK(r->value == read_value(3));
}

TEST_CASE("reads: gets never driven complete with Errc::closed when the client goes", "[reads]") {
  ReadCluster c(1);
  load(c);
  auto client = c.client();
  const std::string k = read_key(4);
  int closed = 0, other = 0;
  for (int i = 0; i < 5; ++i) {
    REQUIRE(client
                ->get_async(k, Consistency::any(),
                            [&](Result<ReadResult> r) {
                              if (!r.ok() && r.error().code() == Errc::closed)
                                ++closed;
                              else
                                ++other;
                            })
                .ok());
  }
  client.reset();
  CHECK(closed == 5);
  CHECK(other == 0);
}

TEST_CASE("reads: blocking callers and an event loop share one client", "[reads][concurrency]") {
  ReadCluster c(2);
  load(c);
  auto o = c.client_options();
  o.reconnect_interval = 10s;
  auto client = ReadClient::connect(o);
  REQUIRE(client.ok());
  // The event loop's callbacks may run on a blocking caller's thread (it drives the I/O
  // then): the loop's counters are atomics.
  std::atomic<int> answered{0}, wrong{0}, failed{0};
  std::atomic<bool> stop_blocking{false};
  std::atomic<int> blocking_wrong{0}, blocking_failed{0}, blocking_done{0};
  std::vector<std::thread> blockers;
  for (int t = 0; t < 3; ++t) {
    blockers.emplace_back([&, t] {
      for (int g = 0; !stop_blocking; ++g) {
        const int i = (t * 101 + g * 13) % kKeys;
        auto r = (*client)->get(read_key(i));
        if (!r.ok())
          ++blocking_failed;
        else if (r->value != read_value(i))
          ++blocking_wrong;
        ++blocking_done;
      }
    });
  }
  constexpr int kTotal = 2000;
  std::vector<std::string> keys(kTotal);
  for (int i = 0; i < kTotal; ++i) keys[static_cast<size_t>(i)] = read_key(i % kKeys);
  std::thread closer([&] {
    std::this_thread::sleep_for(30ms);
    c.servers[0]->close();  // failover in the middle
  });
  int next = 0;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (answered < kTotal && std::chrono::steady_clock::now() < give_up) {
    while (next < kTotal && next - answered < 8) {
      const int i = next++;
      REQUIRE((*client)
                  ->get_async(keys[static_cast<size_t>(i)], Consistency::any(),
                              [&, i](Result<ReadResult> r) {
                                if (!r.ok())
                                  ++failed;
                                else if (r->value != read_value(i % kKeys))
                                  ++wrong;
                                ++answered;
                              })
                  .ok());
    }
    (*client)->poll(1ms);
  }
  closer.join();
  stop_blocking = true;
  for (auto& b : blockers) b.join();
  CHECK(answered == kTotal);
  CHECK(failed == 0);
  CHECK(wrong == 0);
  CHECK(blocking_done > 0);
  CHECK(blocking_failed == 0);
  CHECK(blocking_wrong == 0);
  CHECK((*client)->live_replicas() == 1);
}
