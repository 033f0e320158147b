// bootstrap::Admission over connections of its own kind (Pending, Arrivals): what the RDMA
// CM listener relies on besides sockets. A fake connection is a pipe whose write end plays
// the peer; the TCP listener's own admission tests are in tests/transport/tcp.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "transport/bootstrap/admission.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::bootstrap;
using namespace std::chrono_literals;

namespace {

// What the fake connections of one test did.
struct Journal {
  std::atomic<int> held{0};       // hold() calls
  std::atomic<int> destroyed{0};  // connections closed (destroyed)
  std::atomic<int> asked{0};      // spoke() calls
};

// The peer's side of a fake connection: wake() makes it readable.
struct FakePeer {
  int read_end = -1;
  int write_end = -1;
  FakePeer() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~FakePeer() {
    ::close(read_end);
    ::close(write_end);
  }
  FakePeer(const FakePeer&) = delete;
  FakePeer& operator=(const FakePeer&) = delete;
  void wake() const { REQUIRE(::write(write_end, "x", 1) == 1); }
};

// A fake connection: two descriptors (like an RDMA CM one: completions and CM events);
// it speaks when its first is readable, the second wakes it without that.
class FakeConn final : public Pending {
 public:
  FakeConn(Journal& j, const FakePeer& speaks, const FakePeer& other, Status hold_result = {},
           std::function<void()> on_hold = {})
      : j_(j),
        speaks_(speaks.read_end),
        other_(other.read_end),
        hold_result_(std::move(hold_result)),
        on_hold_(std::move(on_hold)) {}
  ~FakeConn() override { ++j_.destroyed; }
  Status hold(const ConnectionOptions&) override {
    ++j_.held;
    if (on_hold_) on_hold_();
    return hold_result_;
  }
  void watch(std::vector<pollfd>& out) const override {
    out.push_back(pollfd{speaks_, POLLIN, 0});
    out.push_back(pollfd{other_, POLLIN, 0});
  }
  bool spoke(std::span<const pollfd> polled) override {
    ++j_.asked;
    REQUIRE(polled.size() == 2);
    REQUIRE(polled[0].fd == speaks_);
    if ((polled[1].revents & POLLIN) != 0) {
      char c = 0;
      (void)::read(other_, &c, 1);  // consumed: it does not wake us again
    }
    return (polled[0].revents & POLLIN) != 0;
  }

 private:
  Journal& j_;
  int speaks_;
  int other_;
  Status hold_result_;
  std::function<void()> on_hold_;
};

class FakeArrivals final : public Arrivals {
 public:
  explicit FakeArrivals(const FakePeer& bell) : bell_(bell) {}
  [[nodiscard]] int fd() const noexcept override { return bell_.read_end; }
  Arrival next() override {
    std::lock_guard lock(mu_);
    char c = 0;
    (void)::read(bell_.read_end, &c, 1);
    if (queue_.empty()) return {};
    Arrival a = std::move(queue_.front());
    queue_.pop_front();
    return a;
  }
  void arrive(std::unique_ptr<Pending> conn, std::string address) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(Arrival{std::move(conn), std::move(address)});
    }
    bell_.wake();
  }

 private:
  const FakePeer& bell_;
  std::mutex mu_;
  std::deque<Arrival> queue_;
};

struct Rig {
  Journal journal;
  FakePeer bell;
  FakeArrivals* arrivals = nullptr;  // owned by admission
  std::unique_ptr<Admission> admission;
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> refused{0};
  ConnectionOptions o;
  Rig() {
    auto a = std::make_unique<FakeArrivals>(bell);
    arrivals = a.get();
    admission = std::make_unique<Admission>(std::move(a), "fake listener");
    o.counters = {&timeouts, &refused};
  }
};

}  // namespace

TEST_CASE("admission: a connection is held until it says its peer spoke, then handed over",
          "[transport][admission]") {
  Rig rig;
  rig.o.connect_timeout = 10s;
  FakePeer speaks, other;
  rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, speaks, other), "10.0.0.1:5000");
  // Arrived and held, not handed over.
  auto r = rig.admission->next(rig.o, Deadline::after(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::timeout));
  CHECK(rig.journal.held == 1);
  // Its other descriptor wakes it, but it says its peer did not speak: still held.
  other.wake();
  r = rig.admission->next(rig.o, Deadline::after(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(rig.journal.asked >= 1);
  CHECK(rig.journal.destroyed == 0);
  // The peer speaks: handed over with what is left of connect_timeout from its arrival.
  speaks.wake();
  r = rig.admission->next(rig.o, Deadline::after(1s));
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.0.1");
  CHECK(r->deadline.remaining() <= 10s);
  CHECK(r->deadline.remaining() > 9s);
  CHECK(rig.journal.destroyed == 0);
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
  r->conn.reset();
  CHECK(rig.journal.destroyed == 1);
  CHECK(rig.timeouts == 0);
  CHECK(rig.refused == 0);
}

TEST_CASE("admission: connections that cannot be held are closed, counted and pace their address",
          "[transport][admission]") {
  Rig rig;
  rig.o.connect_timeout = 10s;
  FakePeer speaks, other;
  const Status broken = Error(Errc::protocol_error, "not one of ours");
  for (uint32_t i = 0; i < kFailuresBeforePacing; ++i)
    rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, speaks, other, broken),
                         "10.0.0.2:" + std::to_string(6000 + i));
  auto r = rig.admission->next(rig.o, Deadline::after(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(rig.journal.held == static_cast<int>(kFailuresBeforePacing));
  CHECK(rig.journal.destroyed == static_cast<int>(kFailuresBeforePacing));
  CHECK(rig.refused == kFailuresBeforePacing);
  // The address is paced, not shut out: its next connection, whose peer spoke at once, is
  // held and handed over kFailedPace after the last failure at the earliest.
  FakePeer speaks2, other2;
  speaks2.wake();
  const auto t0 = Clock::now();
  rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, speaks2, other2), "10.0.0.2:6100");
  r = rig.admission->next(rig.o, Deadline::after(2s));
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.0.2");
  CHECK(Clock::now() - t0 <= 2s);
  CHECK(rig.journal.destroyed == static_cast<int>(kFailuresBeforePacing));
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
  // A success ends the pacing; another address was never affected.
  FakePeer speaks3, other3;
  speaks3.wake();
  rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, speaks3, other3), "10.0.0.3:7000");
  r = rig.admission->next(rig.o, Deadline::after(1s));
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.0.3");
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
  CHECK(rig.refused == kFailuresBeforePacing);
}

TEST_CASE("admission: failed handshakes pace their address without closing its connections",
          "[transport][admission]") {
  // A peer that keeps failing (a wrong key) and a real one behind the same address: the
  // real one waits at most for the pace, is never closed, and gets its handshake.
  Rig rig;
  rig.o.connect_timeout = 10s;
  std::vector<std::unique_ptr<FakePeer>> peers;
  auto spoken = [&](const std::string& address) {
    peers.push_back(std::make_unique<FakePeer>());
    const FakePeer& p = *peers.back();
    p.wake();
    rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, p, p), address);
  };
  for (int i = 0; i < 6; ++i) {
    spoken("10.0.5.1:" + std::to_string(100 + i));
    auto r = rig.admission->next(rig.o, Deadline::after(2s));
    REQUIRE(r.ok());
    rig.admission->finished(r->host, Admission::Outcome::failed, rig.o, "wrong key");
  }
  // Two arrive together: the failing peer's and the real one's. Both are handed over in
  // turn, one pace apart at least; neither is closed.
  spoken("10.0.5.1:200");
  spoken("10.0.5.1:201");
  const int destroyed = rig.journal.destroyed;
  const auto t0 = Clock::now();
  auto a = rig.admission->next(rig.o, Deadline::after(2s));
  REQUIRE(a.ok());
  rig.admission->finished(a->host, Admission::Outcome::failed, rig.o, "wrong key");
  auto b = rig.admission->next(rig.o, Deadline::after(2s));
  REQUIRE(b.ok());
  const auto waited = Clock::now() - t0;
  CHECK(waited >= kFailedPace);
  CHECK(waited < 2s);
  rig.admission->finished(b->host, Admission::Outcome::ok, rig.o);
  a->conn.reset();
  b->conn.reset();
  CHECK(rig.journal.destroyed == destroyed + 2);  // the two handed over, by us
  CHECK(rig.refused == 7);                        // the failed handshakes
}

TEST_CASE("admission: held connections close at their deadline, and one address gets a quarter",
          "[transport][admission]") {
  Rig rig;
  rig.o.connect_timeout = 300ms;
  rig.o.max_handshakes = 8;  // two per address once four are in use
  std::vector<std::unique_ptr<FakePeer>> peers;
  auto silent = [&](const std::string& address) {
    peers.push_back(std::make_unique<FakePeer>());
    const FakePeer& p = *peers.back();
    rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, p, p), address);
  };
  for (int i = 0; i < 4; ++i) silent("10.0.0.4:" + std::to_string(100 + i));
  // A fifth: half is in use and that address has more than its share (two, once four are
  // in use); it takes the place of that address's oldest.
  silent("10.0.0.4:200");
  auto r = rig.admission->next(rig.o, Deadline::after(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(rig.refused == 1);
  CHECK(rig.journal.held == 5);
  CHECK(rig.journal.destroyed == 1);
  // The four held time out at their deadline, while next() is being called; each is
  // closed.
  r = rig.admission->next(rig.o, Deadline::after(600ms));
  REQUIRE_FALSE(r.ok());
  CHECK(rig.timeouts == 4);
  // Closed after the lock was released, by this or the next call.
  (void)rig.admission->next(rig.o, Deadline::after(1ms));
  CHECK(rig.journal.destroyed == 5);
  // The address is not shut out: a peer of it that speaks is handed over.
  peers.push_back(std::make_unique<FakePeer>());
  peers.back()->wake();
  rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, *peers.back(), *peers.back()),
                       "10.0.0.4:300");
  r = rig.admission->next(rig.o, Deadline::after(1s));
  REQUIRE(r.ok());
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
}

TEST_CASE("admission: a full admission evicts the oldest silent connection",
          "[transport][admission]") {
  Rig rig;
  rig.o.connect_timeout = 10s;
  rig.o.max_handshakes = 4;
  std::vector<std::unique_ptr<FakePeer>> peers;
  auto arrive = [&](const std::string& address) -> const FakePeer& {
    peers.push_back(std::make_unique<FakePeer>());
    const FakePeer& p = *peers.back();
    rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, p, p), address);
    return p;
  };
  for (int i = 0; i < 4; ++i) arrive("10.0.1." + std::to_string(i) + ":1");
  REQUIRE_FALSE(rig.admission->next(rig.o, Deadline::after(50ms)).ok());
  CHECK(rig.journal.held == 4);
  const FakePeer& real = arrive("10.0.2.1:1");
  real.wake();
  auto r = rig.admission->next(rig.o, Deadline::after(1s));
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.2.1");
  CHECK(rig.refused == 1);  // the oldest silent one made room
  CHECK(rig.journal.destroyed == 1);
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
}

TEST_CASE("admission: readying a connection does not hold up the hand-over of another",
          "[transport][admission]") {
  // An RDMA CM connection is readied (queue pair, buffers, rdma_accept) without the lock:
  // meanwhile another thread hands over a connection whose peer spoke.
  Rig rig;
  rig.o.connect_timeout = 10s;
  FakePeer fast, fast_other, slow, slow_other;
  fast.wake();
  std::promise<void> handed_over;
  auto released = handed_over.get_future();
  std::atomic<bool> waited_out{false};
  rig.arrivals->arrive(std::make_unique<FakeConn>(rig.journal, fast, fast_other), "10.0.3.1:1");
  rig.arrivals->arrive(
      std::make_unique<FakeConn>(rig.journal, slow, slow_other, Status{},
                                 [&] {
                                   if (released.wait_for(5s) != std::future_status::ready)
                                     waited_out = true;
                                 }),
      "10.0.3.2:1");
  // This call readies both arrivals; the second blocks in hold() until released.
  auto first = std::async(std::launch::async,
                          [&] { return rig.admission->next(rig.o, Deadline::after(100ms)); });
  while (rig.journal.held < 2) std::this_thread::sleep_for(1ms);
  // Meanwhile, another caller gets the one that spoke.
  auto r = rig.admission->next(rig.o, Deadline::after(3s));
  handed_over.set_value();
  REQUIRE(r.ok());
  CHECK(r->host == "10.0.3.1");
  CHECK_FALSE(waited_out);
  (void)first.get();
  rig.admission->finished(r->host, Admission::Outcome::ok, rig.o);
}
