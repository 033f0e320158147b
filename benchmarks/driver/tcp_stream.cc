#include "tcp_stream.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "child_process.h"
#include "control_socket.h"
#include "flags.h"
#include "rdmarepl/core/clock.h"

namespace rdmarepl::bench {

namespace {

using namespace std::chrono_literals;
using kvdemo::ChildProcess;
using kvdemo::ControlSocket;

// A plain owner of a socket descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int sink_main(uint64_t expected, ControlSocket& ctl) {
  Fd lfd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(lfd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(lfd.get(), 1) != 0 ||
      ::getsockname(lfd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    (void)ctl.send_line(fmt::format("error message=tcp-sink listen: {}", std::strerror(errno)));
    return 1;
  }
  if (!ctl.send_line(fmt::format("ready port={}", ntohs(addr.sin_port)))) return 1;
  Fd conn(::accept4(lfd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (conn.get() < 0) return 1;
  // 1 MiB reads: large enough that the receiver makes few system calls per record.
  std::vector<char> buf(1u << 20);
  uint64_t got = 0;
  while (got < expected) {
    ssize_t r = ::recv(conn.get(), buf.data(), buf.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<uint64_t>(r);
  }
  char ack = got == expected ? 'y' : 'n';
  if (!write_all(conn.get(), &ack, 1)) return 1;
  (void)ctl.send_line(fmt::format("done bytes={}", got));
  (void)ctl.read_line(10s);
  return 0;
}

}  // namespace

std::optional<int> run_tcp_sink_if_requested(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--role") != 0 || std::strcmp(argv[2], "tcp-sink") != 0) {
    return std::nullopt;
  }
  ControlSocket ctl(kvdemo::kControlFd);
  auto flags = kvdemo::Flags::parse(argc, argv, {});
  if (!flags) return 1;
  auto bytes = flags->get_u64("bytes", 0);
  if (!bytes) return 1;
  return sink_main(*bytes, ctl);
}

Result<StreamResult> run_tcp_stream(uint64_t records, uint32_t record_bytes) {
  StreamResult res;
  res.records = records;
  res.bytes = records * record_bytes;
  double self_start = kvdemo::self_cpu_seconds();
  auto child =
      ChildProcess::spawn("tcp-sink", {"--role", "tcp-sink", "--bytes", std::to_string(res.bytes)});
  if (!child) return std::move(child).error();
  auto ready = child->control().read_line(10s);
  if (!ready || ready->rfind("ready ", 0) != 0) {
    return Error(Errc::io_error,
                 "tcp-sink did not start: " + (ready ? *ready : ready.error().message()));
  }
  auto port = kvdemo::parse_count(kvdemo::field(*ready, "port"), "port");
  if (!port) return std::move(port).error();

  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return errno_error(errno, fmt::format("connect to the tcp-sink at 127.0.0.1:{}", *port));
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Records are windows into a buffer that is bigger than the cache, so that the stream
  // reads memory the way a replication of distinct records would.
  std::vector<char> data(std::max<size_t>(size_t{record_bytes} * 64, 8u << 20));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  const size_t slots = data.size() / record_bytes;

  uint64_t start = mono_ns();
  for (uint64_t i = 0; i < records; ++i) {
    const char* rec = data.data() + (i % slots) * record_bytes;
    if (!write_all(fd.get(), rec, record_bytes)) {
      return errno_error(errno, fmt::format("tcp stream write of record {} of {}", i + 1, records));
    }
  }
  char ack = 0;
  ssize_t r;
  do {
    r = ::recv(fd.get(), &ack, 1, 0);
  } while (r < 0 && errno == EINTR);
  uint64_t elapsed = mono_ns() - start;
  res.verified = r == 1 && ack == 'y';
  res.seconds = static_cast<double>(elapsed) * 1e-9;
  res.ops_per_sec = static_cast<double>(records) / res.seconds;
  res.mb_per_sec = static_cast<double>(res.bytes) / res.seconds / 1e6;
  (void)child->control().read_line(10s);  // "done bytes=N"
  (void)child->control().send_line("quit");
  if (!child->wait(10s)) child->kill_and_reap();
  res.cpu_seconds = child->cpu_seconds() + (kvdemo::self_cpu_seconds() - self_start);
  return res;
}

}  // namespace rdmarepl::bench
