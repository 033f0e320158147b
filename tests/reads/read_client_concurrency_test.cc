// One ReadClient shared by many threads: their gets are coalesced into shared messages,
// each caller gets its own results, and failover still holds (docs/reads.md, "The client:
// one I/O pass for every caller").
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "read_cluster.h"
#include "reads/read_engine.h"

using namespace rdmarepl;
using namespace rdmarepl::reads;
using namespace std::chrono_literals;
using test::ReadCluster;

namespace {

using test::read_key;
using test::read_value;

constexpr int kKeys = 400;

// Runs `threads` callers of `client`, each `gets` times; counts the wrong answers.
struct Callers {
  std::atomic<uint64_t> wrong{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> keys{0};
  std::atomic<uint64_t> done{0};  // gets returned
  std::string first_error;
  std::mutex mu;

  void run(ReadClient& client, int threads, int gets, Ticket ticket) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { caller(client, t, gets, ticket); });
    for (auto& th : ts) th.join();
  }
  void caller(ReadClient& client, int t, int gets, Ticket ticket) {
    for (int g = 0; g < gets; ++g) {
      const int i = (t * 131 + g * 17) % kKeys;
      // Single keys with any, three keys with at_least, and a missing key now and then:
      // messages mix callers, consistency levels do not.
      const std::string k0 = read_key(i), k1 = read_key((i + 1) % kKeys),
                        k2 = read_key((i + 2) % kKeys);
      const std::string missing = "absent-" + std::to_string(g);
      std::vector<std::string_view> ask;
      Consistency c = Consistency::any();
      if (g % 3 == 1) {
        ask = {k0, k1, k2};
        c = Consistency::at_least(ticket, 1000ms);
      } else if (g % 3 == 2) {
        ask = {k0, missing};
      } else {
        ask = {k0};
      }
      auto r = client.get(ask, c);
      keys += ask.size();
      ++done;
      if (!r.ok()) {
        std::lock_guard lock(mu);
        if (first_error.empty()) first_error = r.error().message();
        ++failed;
        continue;
      }
      bool right = (*r)[0].status == ReadStatus::found && (*r)[0].value == read_value(i);
      if (g % 3 == 1)
        right = right && (*r)[1].value == read_value((i + 1) % kKeys) &&
                (*r)[2].value == read_value((i + 2) % kKeys);
      if (g % 3 == 2) right = right && (*r)[1].status == ReadStatus::not_found;
      if (!right) ++wrong;
    }
  }
};

}  // namespace

TEST_CASE("reads: one client shared by threads coalesces their gets", "[reads][concurrency]") {
  ReadCluster c(2);
  Ticket last;
  for (int i = 0; i < kKeys; ++i) last = c.write(read_key(i), read_value(i));
  REQUIRE(c.leader->wait_all_acked(20s).ok());
  auto client = c.client();
  constexpr int kThreads = 8;
  constexpr int kGets = 300;
  Callers callers;
  callers.run(*client, kThreads, kGets, last);
  INFO(callers.first_error);
  CHECK(callers.failed == 0);
  CHECK(callers.wrong == 0);
  // Every key asked for was served once; fewer messages than gets: gets shared messages.
  uint64_t served = 0;
  CHECK(test::eventually([&] {
    served = c.servers[0]->stats().keys + c.servers[1]->stats().keys;
    return served == callers.keys;
  }));
  const uint64_t requests = c.servers[0]->stats().requests + c.servers[1]->stats().requests;
  INFO("requests " << requests << " for " << kThreads * kGets << " gets");
  CHECK(requests < uint64_t{kThreads} * kGets);
}

TEST_CASE("reads: a shared client fails over while many threads read", "[reads][concurrency]") {
  ReadCluster c(2);
  Ticket last;
  for (int i = 0; i < kKeys; ++i) last = c.write(read_key(i), read_value(i));
  REQUIRE(c.leader->wait_all_acked(20s).ok());
  auto o = c.client_options();
  o.reconnect_interval = 10s;
  auto client = ReadClient::connect(o);
  REQUIRE(client.ok());
  Callers callers;
  // The replica closes once a quarter of the gets returned, so that most are still to
  // come however fast the machine reads.
  constexpr int kThreads = 6, kGets = 200;
  std::thread closer([&] {
    while (callers.done < kThreads * kGets / 4) std::this_thread::yield();
    c.servers[0]->close();
  });
  callers.run(**client, kThreads, kGets, last);
  closer.join();
  INFO(callers.first_error);
  CHECK(callers.failed == 0);
  CHECK(callers.wrong == 0);
  CHECK((*client)->live_replicas() == 1);
  // With no replica left every waiting caller gets the error, none hangs.
  c.servers[1]->close();
  Callers after;
  after.run(**client, 4, 3, last);
  CHECK(after.failed == 12);
}

TEST_CASE("reads: the poller role goes to a caller still on the CPU", "[reads][concurrency]") {
  // No replica: the engine's queue of waiting callers is all this needs.
  ReadEngine engine(ReadClientOptions{}, nullptr);
  const std::string_view key = "k";
  std::vector<ReadResult> out(1);
  ReadOp poller, older, newer, newest;
  for (ReadOp* op : {&poller, &older, &newer, &newest}) {
    op->keys = {&key, 1};
    op->out = &out;
    engine.enqueue(*op);
  }
  // Everyone waiting on the CPU: the newest.
  CHECK(engine.waiter_other_than(&poller) == &newest);
  // The newest went to sleep: the newest one still awake, not a sleeper.
  newest.signal = kAsleep;
  CHECK(engine.waiter_other_than(&poller) == &newer);
  newer.signal = kAsleep;
  CHECK(engine.waiter_other_than(&poller) == &older);
  // All asleep: the newest sleeper (someone must take the role).
  older.signal = kAsleep;
  CHECK(engine.waiter_other_than(&poller) == &newest);
  // The role's holder itself is never chosen; here `poller` is the one still awake.
  CHECK(engine.waiter_other_than(&newest) == &poller);
  poller.signal = kAsleep;
  CHECK(engine.waiter_other_than(&newest) == &newer);
}
