// The handshake over a BytePipe other than a socket (what RDMA CM mode does with the QP):
// the same bytes as over TCP, one message per send(), within the bounds a pipe reserves.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "rdmarepl/core/byte_order.h"
#include "transport/bootstrap/handshake.h"
#include "transport/bootstrap/relay.h"
#include "transport/bootstrap/socket.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::bootstrap;
using namespace std::chrono_literals;

namespace {

// One direction of an in-memory pipe: bytes in order, read in any split.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint8_t> bytes;
  bool closed = false;
};

// An in-memory pipe end; records every send() as one frame.
class MemoryPipe final : public BytePipe {
 public:
  MemoryPipe(Channel& out, Channel& in, std::string peer) : out_(out), in_(in), peer_(peer) {}
  ~MemoryPipe() override {
    std::lock_guard lock(out_.mu);
    out_.closed = true;
    out_.cv.notify_all();
  }
  Status send(std::span<const uint8_t> bytes, Deadline) override {
    frames.emplace_back(bytes.begin(), bytes.end());
    std::lock_guard lock(out_.mu);
    out_.bytes.insert(out_.bytes.end(), bytes.begin(), bytes.end());
    out_.cv.notify_all();
    return {};
  }
  Status recv_exact(std::span<uint8_t> out, Deadline deadline) override {
    std::unique_lock lock(in_.mu);
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(std::max(0, deadline.poll_timeout_ms()));
    if (!in_.cv.wait_until(lock, until,
                           [&] { return in_.bytes.size() >= out.size() || in_.closed; }))
      return Error(Errc::timeout, "memory pipe: nothing in time");
    if (in_.bytes.size() < out.size()) return Error(Errc::connection_closed, "memory pipe closed");
    std::copy_n(in_.bytes.begin(), out.size(), out.begin());
    in_.bytes.erase(in_.bytes.begin(), in_.bytes.begin() + static_cast<long>(out.size()));
    return {};
  }
  [[nodiscard]] std::string peer() const override { return peer_; }

  std::vector<std::vector<uint8_t>> frames;

 private:
  Channel& out_;
  Channel& in_;
  std::string peer_;
};

Hello hello_of(std::string node, size_t regions, size_t app_bytes) {
  Hello h;
  h.node_id = std::move(node);
  for (size_t i = 0; i < regions; ++i)
    h.regions.push_back({0x1000 + i * 4096, 4096, static_cast<uint32_t>(i)});
  h.app_data.assign(app_bytes, 'a');
  return h;
}

struct PipeRun {
  Result<Hello> initiator;
  Result<Hello> responder;
  std::vector<std::vector<uint8_t>> initiator_frames;
  std::vector<std::vector<uint8_t>> responder_frames;
};

PipeRun run_over_memory(const Hello& hi, const Hello& hr, std::string_view ki,
                        std::string_view kr) {
  Channel up, down;
  auto pi = std::make_unique<MemoryPipe>(up, down, "responder-end");
  auto pr = std::make_unique<MemoryPipe>(down, up, "initiator-end");
  auto fut = std::async(std::launch::async, [&] {
    return exchange(*pr, hr, Role::responder, kr, Deadline::after(10s));
  });
  auto ri = exchange(*pi, hi, Role::initiator, ki, Deadline::after(10s));
  auto frames_i = pi->frames;
  pi.reset();  // closes our direction: a waiting responder gives up
  auto rr = fut.get();
  return {std::move(ri), std::move(rr), std::move(frames_i), pr->frames};
}

// Every frame is exactly one handshake message: header (type u8, 3 zero bytes, length u32)
// and that many body bytes.
void check_one_message_per_send(const std::vector<std::vector<uint8_t>>& frames) {
  size_t total = 0;
  CHECK(frames.size() <= kMaxMessagesSent);
  for (const auto& f : frames) {
    REQUIRE(f.size() >= 8);
    CHECK(f[1] == 0);
    CHECK(load_be32(f.data() + 4) + 8 == f.size());
    total += f.size();
  }
  CHECK(total <= kMaxBytesSent);
}

using test::relay;

}  // namespace

TEST_CASE("the handshake runs over any byte pipe, one message per send", "[transport][bootstrap]") {
  auto hi = hello_of("initiator", 3, 100);
  auto hr = hello_of("responder", 1, 0);
  SECTION("with a key") {
    auto r = run_over_memory(hi, hr, "k", "k");
    REQUIRE(r.initiator.ok());
    REQUIRE(r.responder.ok());
    CHECK(*r.initiator == hr);
    CHECK(*r.responder == hi);
    REQUIRE(r.initiator_frames.size() == 3);  // Open, Proof, Hello
    REQUIRE(r.responder_frames.size() == 3);  // Open, Hello, Done
    CHECK(r.initiator_frames[2][0] == 3);
    CHECK(r.responder_frames[2][0] == 5);
    check_one_message_per_send(r.initiator_frames);
    check_one_message_per_send(r.responder_frames);
  }
  SECTION("a wrong key: refused on both sides, the Reject is one more message") {
    auto r = run_over_memory(hi, hr, "k", "other");
    REQUIRE_FALSE(r.initiator.ok());
    REQUIRE_FALSE(r.responder.ok());
    CHECK(r.initiator.error().is(Errc::auth_failed));
    CHECK(r.responder.error().is(Errc::auth_failed));
    CHECK(r.responder_frames.back()[0] == 4);  // Reject
    check_one_message_per_send(r.initiator_frames);
    check_one_message_per_send(r.responder_frames);
  }
  SECTION("the largest Hellos fit the bound a pipe reserves") {
    auto big = hello_of(std::string(kMaxNodeIdBytes, 'n'), kMaxRegions, kMaxAppDataBytes);
    big.transport_blob.assign(kMaxTransportBlobBytes, 7);
    auto r = run_over_memory(big, big, "k", "k");
    REQUIRE(r.initiator.ok());
    REQUIRE(r.responder.ok());
    check_one_message_per_send(r.initiator_frames);
    check_one_message_per_send(r.responder_frames);
  }
}

TEST_CASE("a socket carries the same handshake bytes as any other pipe", "[transport][bootstrap]") {
  // Without a key only the Open nonces are random: everything else must match byte for byte.
  auto hi = hello_of("initiator", 2, 10);
  auto hr = hello_of("responder", 4, 3);
  auto mem = run_over_memory(hi, hr, "", "");
  REQUIRE(mem.initiator.ok());
  std::vector<uint8_t> mem_i, mem_r;
  for (const auto& f : mem.initiator_frames) mem_i.insert(mem_i.end(), f.begin(), f.end());
  for (const auto& f : mem.responder_frames) mem_r.insert(mem_r.end(), f.begin(), f.end());

  int a[2], b[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b) == 0);
  Fd client(a[0]), relay_c(a[1]), relay_s(b[0]), server(b[1]);
  std::vector<uint8_t> tcp_i, tcp_r;
  std::thread up([&] { relay(relay_c.get(), relay_s.get(), tcp_i); });
  std::thread down([&] { relay(relay_s.get(), relay_c.get(), tcp_r); });
  auto fut = std::async(std::launch::async, [&] {
    return exchange(server.get(), hr, Role::responder, "", Deadline::after(10s));
  });
  auto ri = exchange(client.get(), hi, Role::initiator, "", Deadline::after(10s));
  REQUIRE(ri.ok());
  REQUIRE(fut.get().ok());
  client.reset();
  server.reset();
  up.join();
  down.join();

  constexpr size_t kNonceAt = 8 + 8, kNonceBytes = 32;  // Open header, magic..flags
  REQUIRE(tcp_i.size() == mem_i.size());
  REQUIRE(tcp_r.size() == mem_r.size());
  for (auto* v : {&tcp_i, &tcp_r, &mem_i, &mem_r})
    std::fill_n(v->begin() + kNonceAt, kNonceBytes, 0);
  CHECK(tcp_i == mem_i);
  CHECK(tcp_r == mem_r);
}
