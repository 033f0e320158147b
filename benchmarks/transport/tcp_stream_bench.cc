// TCP transport streaming bandwidth against a plain blocking TCP socket stream, both between
// two processes over loopback, measured in the same run with the same message size.
//
//   rdmarepl-bench-transport [--size BYTES] [--total BYTES] [--rounds N]
//
// Transport: 64 KiB writes-with-immediate into a 16 MiB ring registered by the receiver, which
// returns credit every 32 writes with a zero-length write; one signaled write in 16.
// Baseline: send() of the same 64 KiB messages on a blocking socket, recv() into a 64 KiB
// buffer on the other side. Both copy each byte once in user space on each side.
// Prints both bandwidths and their ratio (target: transport >= 80% of the plain stream).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/bootstrap/socket.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace std::chrono_literals;

namespace {

constexpr size_t kRingBytes = 16u << 20;
constexpr uint32_t kCreditEvery = 32;

struct Args {
  size_t size = 64 * 1024;
  size_t total = size_t{2} << 30;
  int rounds = 3;
};

[[noreturn]] void die(const std::string& what) {
  fmt::print(stderr, "rdmarepl-bench-transport: {}\n", what);
  std::exit(1);
}

void set_blocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

// Runs `child(pipe_write_fd)` in a forked process; returns its pid and the read end.
template <class F>
std::pair<pid_t, int> spawn(F child) {
  int fds[2];
  if (::pipe(fds) != 0) die("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) die("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    ::_exit(child(fds[1]));
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

uint16_t read_port(int fd) {
  uint16_t port = 0;
  if (::read(fd, &port, sizeof port) != sizeof port) die("child did not report its port");
  return port;
}

// ---------------------------------------------------------------- plain socket stream

double plain_round(const Args& a) {
  auto [pid, pipe_fd] = spawn([&](int out) {
    auto l = bootstrap::listen_tcp(Endpoint{"127.0.0.1", 0});
    if (!l) return 2;
    uint16_t port = bootstrap::local_endpoint(l->get())->port;
    [[maybe_unused]] auto w = ::write(out, &port, sizeof port);
    auto s = bootstrap::accept_tcp(l->get(), Deadline::after(30s));
    if (!s) return 3;
    set_blocking(s->get());
    std::vector<uint8_t> buf(a.size);
    size_t got = 0;
    while (got < a.total) {
      ssize_t n = ::recv(s->get(), buf.data(), std::min(buf.size(), a.total - got), 0);
      if (n <= 0) return 4;
      got += static_cast<size_t>(n);
    }
    uint8_t done = 1;
    return ::send(s->get(), &done, 1, 0) == 1 ? 0 : 5;
  });
  uint16_t port = read_port(pipe_fd);
  auto c = bootstrap::connect_tcp(Endpoint{"127.0.0.1", port}, Deadline::after(10s));
  if (!c) die(c.error().to_string());
  set_blocking(c->get());
  std::vector<uint8_t> msg(a.size, 0x5a);
  Stopwatch sw;
  for (size_t sent = 0; sent < a.total;) {
    size_t len = std::min(a.size, a.total - sent);
    size_t off = 0;
    while (off < len) {
      ssize_t n = ::send(c->get(), msg.data() + off, len - off, MSG_NOSIGNAL);
      if (n <= 0) die("plain send failed");
      off += static_cast<size_t>(n);
    }
    sent += len;
  }
  uint8_t done = 0;
  if (::recv(c->get(), &done, 1, 0) != 1) die("plain receiver did not confirm");
  double secs = sw.elapsed_s();
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(pipe_fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("plain receiver failed");
  return static_cast<double>(a.total) / secs;
}

// ---------------------------------------------------------------- the TCP transport

int transport_receiver(const Args& a, int out) {
  tcp::TcpTransport t;
  std::vector<uint8_t> ring(kRingBytes);
  auto mr = t.register_memory(ring.data(), ring.size(), Access::local_write | Access::remote_write);
  if (!mr) return 2;
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  if (!l) return 3;
  uint16_t port = (*l)->local_endpoint().port;
  [[maybe_unused]] auto w = ::write(out, &port, sizeof port);
  ConnectionOptions o;
  o.node_id = "bench-receiver";
  o.regions = {(*mr)->remote()};
  o.send_queue_depth = 256;
  o.recv_queue_depth = 1024;
  auto c = (*l)->accept(o, 30s);
  if (!c) return 4;
  Connection& conn = **c;
  if (conn.post_recvs(1024, 0) != PostStatus::ok) return 5;
  size_t writes = (a.total + a.size - 1) / a.size, seen = 0;
  uint64_t bytes = 0;
  Completion cs[64];
  while (seen < writes && conn.healthy()) {
    size_t n = conn.poll(cs);
    if (n == 0) {
      (void)conn.wait(100ms);
      continue;
    }
    uint32_t fresh = 0;
    for (size_t i = 0; i < n; ++i) {
      if (cs[i].opcode != WcOpcode::recv_rdma_with_imm) continue;
      if (cs[i].status != WcStatus::success) return 6;
      bytes += cs[i].byte_len;
      ++seen;
      ++fresh;
      if (seen % kCreditEvery == 0 || seen == writes) {
        WriteRequest credit;
        credit.wr_id = seen;
        credit.imm = static_cast<uint32_t>(seen);
        credit.signaled = seen % (kCreditEvery * 8) == 0 || seen == writes;
        while (conn.post_writes({&credit, 1}) == PostStatus::queue_full) {
          Completion tmp[16];
          (void)conn.poll(tmp);
        }
      }
    }
    if (fresh > 0 && conn.post_recvs(fresh, 0) != PostStatus::ok) return 7;
  }
  // Let the last credit out before closing.
  for (int i = 0; i < 100 && conn.healthy(); ++i)
    if (conn.poll(cs) == 0) (void)conn.wait(10ms);
  return bytes == a.total ? 0 : 8;
}

double transport_round(const Args& a) {
  auto [pid, pipe_fd] = spawn([&](int out) { return transport_receiver(a, out); });
  uint16_t port = read_port(pipe_fd);
  tcp::TcpTransport t;
  std::vector<uint8_t> src(kRingBytes, 0x5a);
  auto mr = t.register_memory(src.data(), src.size(), Access::local_write);
  if (!mr) die(mr.error().to_string());
  ConnectionOptions o;
  o.node_id = "bench-sender";
  o.send_queue_depth = 1024;
  o.recv_queue_depth = 1024;
  auto c = t.connect(Endpoint{"127.0.0.1", port}, o);
  if (!c) die(c.error().to_string());
  Connection& conn = **c;
  if (conn.post_recvs(1024, 0) != PostStatus::ok) die("post_recvs");
  RemoteRegion ring = conn.peer().regions.at(0);
  const uint64_t slots = kRingBytes / a.size;
  const uint64_t window = slots / 2;  // half the ring in flight: the receiver reads the rest
  const uint64_t writes = (a.total + a.size - 1) / a.size;
  uint64_t posted = 0, credited = 0;
  Completion cs[64];
  WriteRequest batch[16];
  Stopwatch sw;
  while (credited < writes) {
    size_t nb = 0;
    while (nb < std::size(batch) && posted + nb < writes && posted + nb - credited < window) {
      uint64_t i = posted + nb;
      uint64_t slot = i % slots;
      WriteRequest& w = batch[nb++];
      w.wr_id = i;
      w.local_addr = src.data() + slot * a.size;
      w.length = static_cast<uint32_t>(std::min<uint64_t>(a.size, a.total - i * a.size));
      w.lkey = (*mr)->region().keys.lkey;
      w.remote_addr = ring.addr + slot * a.size;
      w.rkey = ring.rkey;
      w.imm = static_cast<uint32_t>(i);
      w.signaled = i % 16 == 15 || i + 1 == writes;
    }
    if (nb > 0) {
      PostStatus st = conn.post_writes(std::span(batch, nb));
      if (st == PostStatus::ok)
        posted += nb;
      else if (st != PostStatus::queue_full)
        die("post_writes: " + conn.error().to_string());
    }
    size_t n = conn.poll(cs);
    for (size_t i = 0; i < n; ++i) {
      if (cs[i].status != WcStatus::success) die("completion failed: " + conn.error().to_string());
      if (cs[i].opcode == WcOpcode::recv_rdma_with_imm) {
        credited = std::max<uint64_t>(credited, cs[i].imm);
        (void)conn.post_recvs(1, 0);
      }
    }
    if (n == 0 && (nb == 0)) (void)conn.wait(100ms);
  }
  double secs = sw.elapsed_s();
  conn.close();
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(pipe_fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die(fmt::format("transport receiver failed (status {})", status));
  return static_cast<double>(a.total) / secs;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"rdmarepl-bench-transport: the TCP transport vs a plain TCP stream"};
  app.add_option("--size", a.size, "bytes per message")->capture_default_str();
  app.add_option("--total", a.total, "bytes per round")->capture_default_str();
  app.add_option("--rounds", a.rounds, "rounds (best of each)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (a.size == 0 || a.size > kRingBytes / 4 || a.total < a.size) die("bad --size/--total");
  fmt::print(
      "TCP transport vs plain TCP stream, loopback, two processes, {} KiB messages, "
      "{} MiB per round, {} rounds (best of each)\n",
      a.size / 1024, a.total >> 20, a.rounds);
  double best_plain = 0, best_transport = 0;
  for (int r = 0; r < a.rounds; ++r) {
    double p = plain_round(a);
    double t = transport_round(a);
    fmt::print("  round {}: plain {:8.1f} MiB/s   transport {:8.1f} MiB/s   ratio {:.2f}\n", r + 1,
               p / (1 << 20), t / (1 << 20), t / p);
    best_plain = std::max(best_plain, p);
    best_transport = std::max(best_transport, t);
  }
  fmt::print("plain socket stream  {:8.1f} MiB/s\n", best_plain / (1 << 20));
  fmt::print("TCP transport        {:8.1f} MiB/s\n", best_transport / (1 << 20));
  fmt::print("ratio transport/plain {:.2f} (target >= 0.80)\n", best_transport / best_plain);
  return 0;
}
