// Remote reads against bad clients and under load: malformed, truncated and oversized
// requests, and a read flood that must not hold replication back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "read_cluster.h"
#include "reads/read_format.h"
#include "replication/log_capture.h"

using namespace rdmarepl;
using namespace rdmarepl::reads;
using namespace rdmarepl::transport;
using namespace std::chrono_literals;
using test::ReadCluster;

namespace {

// A hand-made read client on the TCP transport that sends whatever bytes it is given.
struct RawClient {
  tcp::TcpTransport transport;
  std::vector<uint8_t> tx = std::vector<uint8_t>(256 * 1024);
  std::vector<uint8_t> rx = std::vector<uint8_t>(2 << 20);
  std::unique_ptr<MemoryRegion> tx_mr, rx_mr;
  std::unique_ptr<Connection> conn;

  explicit RawClient(const Endpoint& where) {
    auto t = transport.register_memory(tx.data(), tx.size(), Access::local_write);
    auto r = transport.register_memory(rx.data(), rx.size(), Access::local_write);
    REQUIRE((t.ok() && r.ok()));
    tx_mr = std::move(t).value();
    rx_mr = std::move(r).value();
    ConnectionOptions co;
    co.node_id = "raw";
    co.app_data.resize(kHelloBytes);
    encode_hello(Hello{kClientHelloMagic, false, 16, 0, 0},
                 reinterpret_cast<uint8_t*>(co.app_data.data()));
    co.initial_recvs = 1;
    auto c = transport.connect(where, co);
    REQUIRE(c.ok());
    conn = std::move(*c);
    RecvBuffer b{1, rx.data(), static_cast<uint32_t>(rx.size()), rx_mr->region().keys.lkey};
    REQUIRE(conn->post_recv_buffers({&b, 1}) == PostStatus::ok);
  }
  void send(const std::vector<uint8_t>& bytes) {
    std::memcpy(tx.data(), bytes.data(), bytes.size());
    SendRequest s{9, tx.data(), static_cast<uint32_t>(bytes.size()), tx_mr->region().keys.lkey,
                  true};
    REQUIRE(conn->post_sends({&s, 1}) == PostStatus::ok);
  }
  // The next response (after the "ready" message), or nullopt once the connection failed.
  std::optional<ResponseHeader> response() {
    const Deadline d = Deadline::after(5s);
    Completion c[8];
    while (!d.expired()) {
      const size_t n = conn->poll(c);
      for (size_t i = 0; i < n; ++i) {
        if (c[i].status != WcStatus::success) return std::nullopt;
        if (c[i].opcode != WcOpcode::recv || c[i].wr_id != 1) continue;
        ResponseReader r;
        ResponseHeader h;
        std::string_view why;
        REQUIRE(r.open(std::span(rx.data(), c[i].byte_len), h, why));
        RecvBuffer b{1, rx.data(), static_cast<uint32_t>(rx.size()), rx_mr->region().keys.lkey};
        REQUIRE(conn->post_recv_buffers({&b, 1}) == PostStatus::ok);
        return h;
      }
      if (!conn->healthy()) return std::nullopt;
      std::this_thread::sleep_for(50us);
    }
    FAIL("no response within 5 s");
    return std::nullopt;
  }
};

std::vector<uint8_t> good_request(uint32_t id) {
  RequestHeader h;
  h.request_id = id;
  std::vector<std::string_view> keys{"a", "b"};
  std::vector<uint8_t> m(request_size(keys));
  REQUIRE(encode_request(h, keys, m) == m.size());
  return m;
}

}  // namespace

TEST_CASE("reads: malformed, truncated and oversized requests do not stop the replica",
          "[reads][robustness]") {
  ReadServerOptions so;
  so.max_request_bytes = 4096;
  ReadCluster c(1, so);
  c.write("a", "A");
  REQUIRE(c.leader->wait_all_acked(10s).ok());
  test::LogCapture logs;
  auto good = c.client();
  const Endpoint where = c.servers[0]->local_endpoint();

  RawClient raw(where);
  auto m = good_request(41);
  m[0] ^= 0xff;  // bad magic
  raw.send(m);
  auto h = raw.response();
  REQUIRE(h);
  CHECK(h->status == ResponseStatus::bad_request);
  CHECK(h->request_id == 41);
  m = good_request(42);
  m.resize(m.size() - 1);  // truncated: the last key is cut
  raw.send(m);
  h = raw.response();
  REQUIRE(h);
  CHECK(h->status == ResponseStatus::bad_request);
  CHECK(h->request_id == 42);
  raw.send(good_request(43));  // the same connection still works
  h = raw.response();
  REQUIRE(h);
  CHECK(h->status == ResponseStatus::ok);
  CHECK(h->count == 2);
  CHECK(logs.contains("malformed request (id 41", "bad magic"));
  CHECK(logs.contains("malformed request (id 42", "truncated"));

  // Larger than the replica's receive buffers: the connection is closed, with a reason.
  raw.send(std::vector<uint8_t>(so.max_request_bytes + 1, 0x11));
  CHECK_FALSE(raw.response());
  const Deadline d = Deadline::after(5s);
  while (!logs.contains("closing the connection of read client 'raw'") && !d.expired())
    std::this_thread::sleep_for(1ms);
  CHECK(logs.contains("closing the connection of read client 'raw'"));

  // Meanwhile and afterwards, others are served.
  auto r = good->get("a");
  REQUIRE(r.ok());
  CHECK(r->value == "A");
  CHECK(test::eventually([&] { return c.servers[0]->stats().bad_requests == 2; }));
}

TEST_CASE("reads: a read flood does not hold replication back", "[reads][robustness]") {
  ReadCluster c(1);
  constexpr int kKeys = 10000;
  const std::string value(256, 'v');
  auto write_burst = [&](int round) {
    const auto t0 = mono_ns();
    Ticket last;
    std::vector<Ticket> sample;
    for (int i = 0; i < kKeys; ++i) {
      last = c.write("k" + std::to_string(i), value + std::to_string(round));
      if (i % 500 == 0) sample.push_back(last);
    }
    c.leader->flush();
    // Acknowledged means applied: at the moment wait() returns, the follower has applied it.
    for (const Ticket& t : sample) {
      REQUIRE(c.leader->wait(t, 20s).ok());
      CHECK(c.followers[0]->applied_seq(t.shard) >= t.seq);
    }
    REQUIRE(c.leader->wait_all_acked(20s).ok());
    return static_cast<double>(kKeys) * 1e9 / static_cast<double>(mono_ns() - t0);
  };
  write_burst(0);  // warm up
  const double quiet = write_burst(1);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> flood;
  for (int t = 0; t < 1; ++t) {
    flood.emplace_back([&, t] {
      auto client = c.client();
      std::vector<std::string> keys;
      for (int i = 0; i < 64; ++i) keys.push_back("k" + std::to_string((i * 31 + t) % kKeys));
      std::vector<std::string_view> ask(keys.begin(), keys.end());
      while (!stop.load()) {
        auto r = client->get(ask);
        if (!r.ok()) {
          std::fprintf(stderr, "flood: %s\n", r.error().message().c_str());
          break;
        }
        reads += ask.size();
      }
    });
  }
  const Deadline flowing = Deadline::after(10s);  // the flood is on before we measure
  while (reads.load() < 1000 && !flowing.expired()) std::this_thread::sleep_for(1ms);
  const double busy = write_burst(2);
  const uint64_t during = reads.load();
  stop = true;
  for (auto& t : flood) t.join();
  const double ratio = busy / quiet;
  WARN("replication: " << static_cast<uint64_t>(quiet) << " writes/s alone, "
                       << static_cast<uint64_t>(busy) << " writes/s under a flood of "
                       << reads.load() << " reads (ratio " << ratio << ")");
  CHECK(reads.load() > during);  // the flood went on while replication was measured
  // docs/reads.md states the bound and what was measured: replication keeps more than 10%
  // of its throughput. On a shared 2-core machine the flood's client, the read server, the
  // follower's and the leader's pollers compete for the cores, which is what costs
  // throughput here; nothing of the read path takes a lock the follower needs, and every
  // sampled write was applied when its acknowledgement came (checked above).
  CHECK(ratio > 0.10);
}

TEST_CASE("reads: silent and garbage handshakes are closed, logged and counted",
          "[reads][robustness]") {
  ReadServerOptions so;
  so.connect_timeout = 300ms;
  ReadCluster c(1, so);
  c.write("a", "A");
  REQUIRE(c.leader->wait_all_acked(10s).ok());
  test::LogCapture logs;
  const uint16_t port = c.servers[0]->local_endpoint().port;
  auto connect_raw = [&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    return fd;
  };
  const int silent = connect_raw();
  const int garbage = connect_raw();
  const char junk[] = "GET / HTTP/1.1\r\nHost: replica\r\n\r\n";
  REQUIRE(::send(garbage, junk, sizeof junk - 1, MSG_NOSIGNAL) > 0);
  CHECK(test::eventually([&] { return c.servers[0]->stats().handshake_timeouts == 1; }));
  CHECK(test::eventually([&] { return c.servers[0]->stats().handshakes_refused == 1; }));
  CHECK(logs.contains("handshake with 127.0.0.1:", "timed out"));
  CHECK(logs.contains("refused a connection", "not an rdmarepl peer"));
  ::close(silent);
  ::close(garbage);
  // A real client is served throughout.
  auto r = c.client()->get("a");
  REQUIRE(r.ok());
  CHECK(r->value == "A");
  CHECK(c.servers[0]->stats().handshakes_refused == 1);
}

namespace {

// Resident bytes of this process (server and clients alike).
uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return uint64_t{resident} * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("reads: 70 clients that never ask keep no real client out and cost little memory",
          "[reads][robustness]") {
  test::LogCapture logs;
  ReadCluster c(1);
  REQUIRE(c.leader->wait(c.write("a", "A"), 10s).ok());
  REQUIRE(c.client()->get("a").ok());  // warmed up: the server's first client came and went
  REQUIRE(test::eventually([&] { return c.servers[0]->stats().connections == 0; }));
  const uint64_t before = resident_bytes();
  // 70 clients finish their handshake and then never send a request: 64 take every slot
  // (ReadServerOptions::max_connections), the others are refused while none has been idle
  // for a second.
  tcp::TcpTransport transport;
  ConnectionOptions co;
  co.node_id = "idle";
  co.app_data.resize(kHelloBytes);
  encode_hello(Hello{kClientHelloMagic, false, 16, 0, 0},
               reinterpret_cast<uint8_t*>(co.app_data.data()));
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < 70; ++i) {
    auto conn = transport.connect(c.servers[0]->local_endpoint(), co);
    REQUIRE(conn.ok());
    idle.push_back(std::move(*conn));
  }
  REQUIRE(test::eventually([&] { return c.servers[0]->stats().connections == 64; }));
  const uint64_t grown = resident_bytes() - std::min(before, resident_bytes());
  // Each connection's request and response slots (16 x (64 KiB + 256 KiB), 5 MiB) are
  // resident only once used: 64 idle connections cost well under 1 MiB each.
  INFO("resident memory grew by " << grown / 1024 << " KiB for 64 idle connections");
#if defined(__SANITIZE_THREAD__)
  WARN(
      "resident-memory bound not checked: ThreadSanitizer's own memory per thread and "
      "lock (about 110 MB here) is counted in this process's RSS");
#else
  CHECK(grown < 64 * (1u << 20) / 2);
#endif
  // Once they have been idle for a second, a real client takes the place of the one idle
  // the longest.
  std::this_thread::sleep_for(1100ms);
  bool served = false;
  const Deadline d = Deadline::after(10s);
  while (!served && !d.expired()) {
    auto client = ReadClient::connect(c.client_options());
    if (client.ok()) {
      auto r = (*client)->get("a");
      served = r.ok() && r->status == ReadStatus::found && r->value == "A";
    }
    if (!served) std::this_thread::sleep_for(50ms);
  }
  CHECK(served);
  CHECK(c.servers[0]->stats().connections <= 64);
  CHECK(logs.contains("reads: closed the connection of read client 'idle'",
                      "a new client takes its place"));
  CHECK(logs.contains("reads: refused client 'idle'", "max_connections"));
}
