// Idle RDMA CM peers against a follower listening in RDMA CM mode (docs/security.md), in the
// Soft-RoCE VM (tests/rxe/cm-admission.sh, label rxe): the same attack as the idle sockets
// of adversarial_test.cc. The idle peers connect from a second address of the VM's rxe0
// interface (RDMAREPL_RXE_ADDR2), get their connection accepted and then never write their
// handshake; the real leader connects from the first. The follower must hold the idle ones
// without a thread, let the leader in and replicate within one connect_timeout, close each
// idle one at its deadline, count and log it, and never shut that address out.
#include <arpa/inet.h>
#include <poll.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "log_capture.h"
#include "open_channel.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "test_store.h"
#include "transport/verbs/handles.h"

using namespace rdmarepl;
using namespace std::chrono_literals;
using test::LogCapture;
using test::MapStore;
using test::open;
namespace verbs = rdmarepl::transport::verbs;

namespace {

using Channel = ReplicationChannel<MapStore>;
// Long enough for every idle peer to be set up (on an emulated CPU) before the first one's
// deadline, so that all of them are held while the leader connects.
constexpr auto kConnectTimeout = 12000ms;
constexpr int kIdle = 40;
constexpr const char* kKey = "the replica set's key";

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

ChannelOptions base(Role role, std::string node) {
  ChannelOptions o;
  o.role = role;
  o.node_id = std::move(node);
  o.transport = TransportKind::verbs;
  o.rdma_cm = true;
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

template <typename Pred>
bool eventually(Pred pred, Duration limit) {
  const Deadline d = Deadline::after(limit);
  while (!pred()) {
    if (d.expired()) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

sockaddr_in ipv4(const std::string& host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  REQUIRE(inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1);
  return a;
}

// Version-2 private data naming a landing buffer nobody writes to (docs/wire_format.md,
// "RDMA CM set-up"): the request of an rdmarepl peer, which then never writes its Open.
std::vector<uint8_t> idle_private_data() {
  std::vector<uint8_t> d(20, 0);
  d[0] = 'R';
  d[1] = 2;
  d[2] = 4;
  transport::RemoteRegion{0x1000, 4096, 1}.serialize(d.data() + 4);
  return d;
}

// `count` RDMA CM peers from `from` to `to`, all set up at once on one event channel by a
// thread of their own: each resolves, connects and, once accepted, establishes, and then
// stays silent. Records how each ended.
class IdleCmPeers {
 public:
  struct Peer {
    verbs::CmIdHandle id;
    rdma_cm_event_type answer = RDMA_CM_EVENT_ADDR_ERROR;  // CONNECT_RESPONSE or REJECTED
    bool answered = false;
    bool disconnected = false;
    Clock::time_point requested{};  // rdma_connect: before the follower saw the request
    Clock::time_point closed{};
  };

  IdleCmPeers(const std::string& from, const std::string& to, uint16_t port, int count)
      : src_(ipv4(from, 0)), dst_(ipv4(to, port)), peers_(static_cast<size_t>(count)) {
    REQUIRE(channel_);
    for (size_t i = 0; i < peers_.size(); ++i) {
      rdma_cm_id* raw = nullptr;
      REQUIRE(rdma_create_id(channel_.get(), &raw, reinterpret_cast<void*>(i), RDMA_PS_TCP) == 0);
      peers_[i].id.reset(raw);
      REQUIRE(rdma_resolve_addr(raw, reinterpret_cast<sockaddr*>(&src_),
                                reinterpret_cast<sockaddr*>(&dst_), 5000) == 0);
    }
    thread_ = std::thread([this] { run(); });
  }
  ~IdleCmPeers() {
    stop_ = true;
    thread_.join();
    for (auto& p : peers_) p.id.reset();  // before the channel
  }
  IdleCmPeers(const IdleCmPeers&) = delete;
  IdleCmPeers& operator=(const IdleCmPeers&) = delete;

  // How many were answered with `type`, or disconnected (type DISCONNECTED).
  int count(rdma_cm_event_type type) const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& p : peers_) {
      if (type == RDMA_CM_EVENT_DISCONNECTED ? p.disconnected : p.answered && p.answer == type) ++n;
    }
    return n;
  }
  int answered() const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& p : peers_) n += p.answered ? 1 : 0;
    return n;
  }
  // For each accepted peer that was disconnected: how long after its request.
  std::vector<Duration> held_for() const {
    std::lock_guard lock(mu_);
    std::vector<Duration> out;
    for (const auto& p : peers_)
      if (p.disconnected) out.push_back(p.closed - p.requested);
    return out;
  }
  std::string failure() const {
    std::lock_guard lock(mu_);
    return failure_;
  }

 private:
  void run() {
    while (!stop_) {
      pollfd pfd{channel_->fd, POLLIN, 0};
      if (::poll(&pfd, 1, 50) <= 0) continue;
      rdma_cm_event* ev = nullptr;
      if (rdma_get_cm_event(channel_.get(), &ev) != 0) continue;
      const auto type = ev->event;
      const auto i = reinterpret_cast<size_t>(ev->id->context);
      rdma_cm_id* id = ev->id;
      rdma_ack_cm_event(ev);
      std::lock_guard lock(mu_);
      Peer& p = peers_[i];
      switch (type) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
          if (rdma_resolve_route(id, 5000) != 0) failure_ = "rdma_resolve_route failed";
          break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
          const auto data = idle_private_data();
          rdma_conn_param param{};
          param.private_data = data.data();
          param.private_data_len = static_cast<uint8_t>(data.size());
          param.qp_num = 0x100 + static_cast<uint32_t>(i);
          param.retry_count = 1;
          p.requested = Clock::now();
          if (rdma_connect(id, &param) != 0) failure_ = "rdma_connect failed";
          break;
        }
        case RDMA_CM_EVENT_CONNECT_RESPONSE:
          p.answer = type;
          p.answered = true;
          if (rdma_establish(id) != 0) failure_ = "rdma_establish failed";
          break;
        case RDMA_CM_EVENT_REJECTED:
          p.answer = type;
          p.answered = true;
          break;
        case RDMA_CM_EVENT_DISCONNECTED:
          p.disconnected = true;
          p.closed = Clock::now();
          (void)rdma_disconnect(id);
          break;
        case RDMA_CM_EVENT_ESTABLISHED:
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
          break;
        default:
          failure_ = std::string("unexpected RDMA CM event ") + rdma_event_str(type);
      }
    }
  }

  sockaddr_in src_;
  sockaddr_in dst_;
  verbs::CmChannelHandle channel_{rdma_create_event_channel()};
  mutable std::mutex mu_;
  std::vector<Peer> peers_;
  std::string failure_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

int64_t ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

TEST_CASE("a real leader connects over RDMA CM within connect_timeout while idle CM peers are held",
          "[.rxe][cm_admission]") {
  const std::string addr = env_or("RDMAREPL_RXE_ADDR", "10.9.0.1");
  const std::string idle_from = env_or("RDMAREPL_RXE_ADDR2", "");
  if (idle_from.empty()) {
    WARN(
        "skipped: RDMAREPL_RXE_ADDR2 (a second address of the RDMA interface) is not set; "
        "tests/rxe/cm-admission.sh sets it in the Soft-RoCE VM");
    return;
  }
  LogCapture logs;
  MapStore fstore;
  auto fo = base(Role::follower, "follower");
  fo.listen = {addr, 0};
  auto follower = open(fo, fstore);
  const uint16_t port = follower->local_endpoint().port;

  // kIdle peers from the second address: each is accepted; once half of max_handshakes
  // (32) is in use, that address is over its quarter and each new one takes the place of
  // its oldest, which is disconnected. 32 stay held.
  const uint64_t held = fo.max_handshakes / 2;
  const int evicted = kIdle - static_cast<int>(held);
  IdleCmPeers idle(idle_from, addr, port, kIdle);
  REQUIRE(eventually([&] { return idle.answered() == kIdle || !idle.failure().empty(); }, 60s));
  INFO(idle.failure());
  REQUIRE(idle.failure().empty());
  CHECK(idle.count(RDMA_CM_EVENT_CONNECT_RESPONSE) == kIdle);
  REQUIRE(eventually([&] { return idle.count(RDMA_CM_EVENT_DISCONNECTED) >= evicted; }, 10s));
  CHECK(logs.contains("closed the connection from " + idle_from + ":", "takes its place"));

  // The leader, from the first address, connects and replicates while they are held.
  const auto t0 = Clock::now();
  MapStore lstore;
  auto lo = base(Role::leader, "leader");
  lo.peers = {follower->local_endpoint()};
  auto leader = open(lo, lstore);
  auto w = leader->replicate("k", "v");
  REQUIRE(w.status == WriteStatus::ok);
  lstore.put("k", "v");
  leader->flush();
  REQUIRE(leader->wait(w.ticket, kConnectTimeout).ok());
  const auto connected = Clock::now() - t0;
  INFO("the leader's write was acknowledged after " << ms(connected) << " ms");
  CHECK(connected < kConnectTimeout);
  CHECK(idle.count(RDMA_CM_EVENT_DISCONNECTED) == evicted);  // the others still held
  CHECK(follower->metrics().handshake_timeouts == 0);

  // Each held one is disconnected at its deadline, counted as a timeout and logged.
  REQUIRE(eventually([&] { return idle.count(RDMA_CM_EVENT_DISCONNECTED) == kIdle; },
                     kConnectTimeout + 20s));
  Duration shortest = Duration::max();
  Duration longest = Duration::zero();
  int at_deadline = 0;
  for (const Duration d : idle.held_for()) {
    // Its deadline is connect_timeout from the request's arrival, which follows the request.
    INFO("an idle peer was disconnected " << ms(d) << " ms after its request");
    CHECK(d < kConnectTimeout + 6s);
    if (d < kConnectTimeout) continue;  // evicted
    ++at_deadline;
    shortest = std::min(shortest, d);
    longest = std::max(longest, d);
  }
  CHECK(at_deadline == static_cast<int>(held));
  REQUIRE(eventually([&] { return follower->metrics().handshake_timeouts >= held; }, 5s));
  const auto m = follower->metrics();
  CHECK(m.handshake_timeouts == held);
  CHECK(m.handshakes_refused == static_cast<uint64_t>(kIdle) - held);
  CHECK(logs.contains("handshake with " + idle_from + ":", "timed out: it sent nothing"));
  std::printf(
      "cm_admission: %d idle RDMA CM peers from %s: %d accepted, %d replaced by newer ones; the "
      "leader "
      "from %s acknowledged after %lld ms (connect_timeout %lld ms); the held ones were "
      "disconnected %lld..%lld ms after their request; handshake_timeouts %llu, "
      "handshakes_refused %llu\n",
      kIdle, idle_from.c_str(), idle.count(RDMA_CM_EVENT_CONNECT_RESPONSE), evicted, addr.c_str(),
      static_cast<long long>(ms(connected)), static_cast<long long>(ms(kConnectTimeout)),
      static_cast<long long>(ms(shortest)), static_cast<long long>(ms(longest)),
      static_cast<unsigned long long>(m.handshake_timeouts),
      static_cast<unsigned long long>(m.handshakes_refused));

  // The address is not shut out for what its idle peers did: a new request is accepted.
  {
    IdleCmPeers late(idle_from, addr, port, 1);
    REQUIRE(eventually([&] { return late.answered() == 1 || !late.failure().empty(); }, 30s));
    CHECK(late.count(RDMA_CM_EVENT_CONNECT_RESPONSE) == 1);
  }

  // The real leader was never delayed or disturbed.
  for (int i = 0; i < 50; ++i) {
    const std::string key = "after" + std::to_string(i);
    REQUIRE(leader->replicate(key, "value").status == WriteStatus::ok);
    lstore.put(key, "value");
  }
  leader->flush();
  REQUIRE(leader->wait_all_acked(30s).ok());
  CHECK(follower->metrics().reconnects == 0);
  CHECK(fstore.digest() == lstore.digest());
}
