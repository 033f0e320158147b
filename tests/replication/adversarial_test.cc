// Attacks on a follower over real TCP sockets (docs/security.md): idle sockets that would
// starve the handshakes, and a second leader with the key that tries to take the shards of
// the live one. Each checks that the real leader keeps (or, with a higher epoch, hands over)
// the follower, that the store is what the real leader wrote, and that the log names the
// attacker.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "log_capture.h"
#include "open_channel.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "test_store.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LogCapture;
using test::MapStore;
using test::open;

namespace {

using Channel = ReplicationChannel<MapStore>;
constexpr auto kConnectTimeout = 1000ms;
constexpr const char* kKey = "the replica set's key";

ChannelOptions base(Role role, std::string node) {
  ChannelOptions o;
  o.role = role;
  o.node_id = std::move(node);
  o.transport = TransportKind::tcp;
  o.pre_shared_key = kKey;
  o.shards = 1;
  o.ring_bytes = 256 * 1024;
  o.batch_bytes = 16 * 1024;
  o.max_value_bytes = 4096;
  o.retain_bytes = 1 << 20;
  o.zero_copy_pool_bytes = 0;
  o.connect_timeout = kConnectTimeout;
  o.reconnect_interval = 20ms;
  o.reconnect_max_interval = 200ms;
  return o;
}

std::unique_ptr<Channel> leader_of(const Channel& follower, std::string node, uint64_t epoch,
                                   MapStore& store) {
  auto o = base(Role::leader, std::move(node));
  o.peers = {follower.local_endpoint()};
  o.leader_epoch = epoch;
  return open(o, store);
}

template <typename Pred>
bool eventually(Pred pred, Duration limit = 10s) {
  const Deadline d = Deadline::after(limit);
  while (!pred()) {
    if (d.expired()) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A TCP connection from `source` (a loopback address) to `port` that sends nothing. -1 when
// the connect failed.
int idle_socket(const char* source, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the follower closed `fd` within `limit` (a read sees EOF or a reset).
// `count` idle sockets to `port`, the i-th from address source(i), held open without a byte
// sent.
template <class Source>
std::vector<int> hold_idle_sockets(uint16_t port, int count, Source source) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const std::string from = source(i);
    const int fd = idle_socket(from.c_str(), port);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  return fds;
}

bool closed_by_peer(int fd, Duration limit) {
  timeval tv{};
  tv.tv_usec = static_cast<suseconds_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(limit).count());
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Whether the follower closed `fd` within `limit`, whatever it sent before (a Reject).
bool closed_after_reading(int fd, Duration limit) {
  const Deadline d = Deadline::after(limit);
  timeval tv{};
  tv.tv_usec = 50'000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  while (!d.expired()) {
    char buf[1024];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return true;
  }
  return false;
}

// `n` bytes that are no handshake message (a fixed xorshift stream).
std::vector<uint8_t> random_bytes(size_t n) {
  std::vector<uint8_t> out(n);
  uint32_t x = 0x2545F491u;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  out[0] = 0xEE;  // an unknown message type
  return out;
}

// Writes `n` records "<prefix><i>" (also into `expected`, the leader's store) and waits until
// the follower acknowledged them.
void write_acked(Channel& leader, MapStore& expected, const std::string& prefix, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string key = prefix + std::to_string(i);
    const std::string value = "value " + std::to_string(i);
    auto w = leader.replicate(key, value);
    REQUIRE(w.status == WriteStatus::ok);
    expected.put(key, value);
  }
  leader.flush();
  REQUIRE(leader.wait_all_acked(10s).ok());
}

}  // namespace

TEST_CASE("a real leader connects within connect_timeout while 200 idle sockets are held",
          "[adversarial]") {
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  auto follower = open(fo, fstore);
  const uint16_t port = follower->local_endpoint().port;

  // 200 sockets from another loopback address, held open without a byte sent.
  const std::vector<int> idle =
      hold_idle_sockets(port, 200, [](int) { return std::string("127.0.0.2"); });
  const auto t0 = Clock::now();
  MapStore lstore;
  auto leader = leader_of(*follower, "leader", 0, lstore);
  auto w = leader->replicate("k", "v");
  REQUIRE(w.status == WriteStatus::ok);
  lstore.put("k", "v");
  leader->flush();
  REQUIRE(leader->wait(w.ticket, 10s).ok());
  const auto connected = Clock::now() - t0;
  INFO("the leader's write was acknowledged after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(connected).count() << " ms");
  CHECK(connected < kConnectTimeout);

  // Half of max_handshakes (32) stay held and time out (then that address has more than a
  // quarter of them, and each newer one takes the place of its oldest, which is closed).
  // On a loaded machine the follower may still be taking the 200 in when the first held
  // ones time out; each freed slot then holds one more, so 32 is the least.
  const uint64_t held = fo.max_handshakes / 2;
  REQUIRE(eventually([&] { return follower->metrics().handshake_timeouts >= held; }, 5s));
  REQUIRE(eventually(
      [&] {
        const auto m = follower->metrics();
        return m.handshakes_refused + m.handshake_timeouts >= 200;
      },
      10s));
  const auto m = follower->metrics();
  CHECK(m.handshake_timeouts >= held);
  CHECK(m.handshake_timeouts <= 2 * held);
  CHECK(m.handshakes_refused + m.handshake_timeouts == 200);
  CHECK(logs.contains("handshake with 127.0.0.2:", "timed out"));
  CHECK(logs.contains("closed the connection from 127.0.0.2:", "takes its place"));
  // At most one line per kind and address per second: the log says how many it held back.
  CHECK(logs.contains("127.0.0.2", "held back"));

  // That address is not shut out: a new connection from it is held, not closed at once.
  const int late = idle_socket("127.0.0.2", port);
  REQUIRE(late >= 0);
  CHECK_FALSE(closed_by_peer(late, 300ms));
  ::close(late);
  for (int fd : idle) ::close(fd);

  // The real leader was never delayed.
  write_acked(*leader, lstore, "after", 50);
  CHECK(fstore.digest() == lstore.digest());
}

TEST_CASE("a keyless peer at the leader's own address cannot lock the real leader out",
          "[adversarial]") {
  // Behind one address (the same host, a NAT, a proxy): an intruder without the key that
  // retries every 20-200 ms, another that tries a wrong-key handshake every 10 ms, and 40
  // sockets that connect and say nothing, all from 127.0.0.1 like the real leader. The real
  // leader must connect within 2 s while they keep at it.
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  auto follower = open(fo, fstore);
  const uint16_t port = follower->local_endpoint().port;

  MapStore istore;
  auto io = base(Role::leader, "leader");
  io.pre_shared_key = "not the replica set's key";
  io.peers = {follower->local_endpoint()};
  auto intruder = open(io, istore);
  std::atomic<bool> stop{false};
  std::thread hammer([&] {
    transport::tcp::TcpTransport t;
    transport::ConnectionOptions co;
    co.node_id = "leader";
    co.pre_shared_key = "a guess";
    co.connect_timeout = 500ms;
    while (!stop) {
      (void)t.connect(follower->local_endpoint(), co);
      std::this_thread::sleep_for(10ms);
    }
  });
  const std::vector<int> idle =
      hold_idle_sockets(port, 40, [](int) { return std::string("127.0.0.1"); });
  // The attack is under way: handshakes from the address have failed.
  REQUIRE(eventually([&] { return follower->metrics().handshakes_refused >= 10; }, 10s));

  const auto t0 = Clock::now();
  MapStore lstore;
  auto leader = leader_of(*follower, "leader", 0, lstore);
  auto w = leader->replicate("k", "v");
  REQUIRE(w.status == WriteStatus::ok);
  lstore.put("k", "v");
  leader->flush();
  const bool acked = leader->wait(w.ticket, 2s).ok();
  const auto connected = Clock::now() - t0;
  INFO("the leader's write was acknowledged after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(connected).count() << " ms");
  CHECK(acked);
  // Still under attack: the leader keeps replicating.
  write_acked(*leader, lstore, "during", 50);
  const auto m = follower->metrics();
  stop = true;
  hammer.join();
  for (int fd : idle) ::close(fd);
  intruder.reset();
  CHECK(m.handshakes_refused >= 10);
  CHECK(fstore.digest() == lstore.digest());
  CHECK(logs.contains("refused a connection", "127.0.0.1"));
}

TEST_CASE("idle sockets from many addresses make room for a real leader", "[adversarial]") {
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  auto follower = open(fo, fstore);
  const uint16_t port = follower->local_endpoint().port;
  // 200 sockets from 50 addresses: more than max_handshakes (64) in all, within the limit
  // per address. The oldest silent ones are closed to make room.
  const std::vector<int> idle =
      hold_idle_sockets(port, 200, [](int i) { return "127.0.1." + std::to_string(2 + i % 50); });
  const auto t0 = Clock::now();
  MapStore lstore;
  auto leader = leader_of(*follower, "leader", 0, lstore);
  write_acked(*leader, lstore, "k", 20);
  const auto connected = Clock::now() - t0;
  INFO("acknowledged after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(connected).count() << " ms");
  CHECK(connected < kConnectTimeout);
  CHECK(logs.contains("closed the connection from 127.0.1.", "it sent nothing"));
  // Every idle socket ends closed: to make room, at once (over the limits), or at its
  // deadline; the kernel hands some over only after retransmitting its handshake.
  auto closed = [&] {
    const auto m = follower->metrics();
    return m.handshakes_refused + m.handshake_timeouts;
  };
  REQUIRE(eventually([&] { return closed() >= 200; }, 10s));
  CHECK(closed() == 200);
  CHECK(follower->metrics().handshakes_refused > 0);
  for (int fd : idle) ::close(fd);
  CHECK(fstore.digest() == lstore.digest());
}

TEST_CASE("a second leader with the key is refused unless its epoch is higher", "[adversarial]") {
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  auto follower = open(fo, fstore);

  MapStore real_store;
  auto real = leader_of(*follower, "leader-a", 1, real_store);
  write_acked(*real, real_store, "real", 100);

  SECTION("an equal or lower epoch from another identity is refused") {
    for (const uint64_t epoch : {uint64_t{1}, uint64_t{0}}) {
      logs.clear();
      const uint64_t refused_before = follower->metrics().leaders_refused;
      MapStore forged_store;
      auto forged = leader_of(*follower, "leader-x", epoch, forged_store);
      for (int i = 0; i < 20; ++i) (void)forged->replicate("real" + std::to_string(i), "PWNED");
      forged->flush();
      // It keeps reconnecting; every attempt is refused and named.
      REQUIRE(
          eventually([&] { return follower->metrics().leaders_refused >= refused_before + 2; }));
      CHECK(logs.contains("refused leader leader-x", "leader-a"));
      CHECK(logs.contains("refused leader leader-x", epoch == 1 ? "holds the shards" : "below"));
      // The refused leader is told why in its handshake (a Reject), and logs it.
      CHECK(logs.contains("rdmarepl leader:", "the peer refused us: refused leader leader-x"));
      write_acked(*real, real_store, "more" + std::to_string(epoch), 50);
      CHECK(fstore.digest() == real_store.digest());
      CHECK(follower->metrics().reconnects == 0);  // the real session was never replaced
    }
  }

  SECTION("a higher epoch takes over, and the deposed leader is refused") {
    MapStore next_store;
    auto next = leader_of(*follower, "leader-b", 2, next_store);
    REQUIRE(eventually(
        [&] { return logs.contains("leader-b", "took over the shards from leader leader-a"); }));
    // The deposed leader reconnects with epoch 1 and is refused from now on.
    REQUIRE(eventually([&] { return logs.contains("refused leader leader-a", "below epoch 2"); }));
    // Nothing of the deposed leader is applied any more.
    (void)real->replicate("late", "from the deposed leader");
    real->flush();
    std::this_thread::sleep_for(300ms);
    std::lock_guard lock(fstore.mu);
    CHECK(fstore.data.count("late") == 0);
  }
}

TEST_CASE("garbage before the handshake is refused and named, and the real leader is not disturbed",
          "[adversarial]") {
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  auto follower = open(fo, fstore);
  const uint16_t port = follower->local_endpoint().port;
  MapStore lstore;
  auto leader = leader_of(*follower, "leader", 0, lstore);
  write_acked(*leader, lstore, "before", 50);

  struct Garbage {
    const char* source;          // a loopback address of its own
    std::vector<uint8_t> bytes;  // sent right after the connect
    const char* logged;          // what the follower's log must say about it
  };
  // An Open header claiming a body of 2 GiB; an Open header of 40 bytes with 10 of them, then
  // the end of the stream.
  const std::vector<uint8_t> oversized{1, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff};
  std::vector<uint8_t> truncated{1, 0, 0, 0, 0, 0, 0, 40};
  truncated.resize(8 + 10, 0x52);
  const std::vector<Garbage> cases{
      {"127.0.0.3", random_bytes(512), "this is not an rdmarepl peer"},
      {"127.0.0.4", oversized, "exceeds its limit"},
      {"127.0.0.5", truncated, "closed the connection after 10 of 40 expected bytes"},
  };
  for (const auto& g : cases) {
    INFO(g.logged);
    const int fd = idle_socket(g.source, port);
    REQUIRE(fd >= 0);
    REQUIRE(::send(fd, g.bytes.data(), g.bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(g.bytes.size()));
    if (&g == &cases.back()) ::shutdown(fd, SHUT_WR);
    CHECK(closed_after_reading(fd, 3s));
    ::close(fd);
    CHECK(eventually([&] { return logs.contains("refused a connection", g.logged); }, 3s));
    CHECK(logs.contains(g.logged, g.source));
  }
  CHECK(follower->metrics().handshakes_refused >= cases.size());
  // The follower kept serving its leader: nothing was dropped or applied.
  write_acked(*leader, lstore, "after", 50);
  CHECK(fstore.digest() == lstore.digest());
  CHECK(follower->metrics().reconnects == 0);
}

TEST_CASE("a follower with a log remembers the highest leader epoch across a restart",
          "[adversarial]") {
  wal::test::TempDir dir;
  MapStore fstore, bstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {"127.0.0.1", 0};
  fo.wal_dir = dir.path();
  {
    auto follower = open(fo, fstore);
    auto b = leader_of(*follower, "leader-b", 2, bstore);
    write_acked(*b, bstore, "b", 20);
  }
  // Restarted (on another port): the deposed leader-a, epoch 1, comes back first.
  LogCapture logs;
  MapStore restarted;
  auto follower = open(fo, restarted);
  REQUIRE(restarted.digest() == bstore.digest());  // recovered from its log
  MapStore astore;
  auto a = leader_of(*follower, "leader-a", 1, astore);
  for (int i = 0; i < 30; ++i) (void)a->replicate("b" + std::to_string(i), "PWNED");
  a->flush();
  REQUIRE(eventually([&] { return follower->metrics().leaders_refused >= 2; }));
  CHECK(logs.contains("refused leader leader-a",
                      "below epoch 2 of leader leader-b (before this follower restarted)"));
  CHECK(restarted.digest() == bstore.digest());
}
