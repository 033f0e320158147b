#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace rdmarepl::kvdemo {

namespace {

int connect_to(const std::string& host, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<TcpProxy>> TcpProxy::start(const std::string& host, uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_error(errno, "socket for a proxy");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_error(err, "binding a proxy's loopback port");
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_error(err, "pipe for a proxy");
  }
  std::unique_ptr<TcpProxy> p(new TcpProxy(fd, ntohs(a.sin_port), host, port, wake[0], wake[1]));
  p->thread_ = std::thread([raw = p.get()] { raw->loop(); });
  return p;
}

TcpProxy::TcpProxy(int listen_fd, uint16_t port, std::string host, uint16_t target_port, int wake_r,
                   int wake_w)
    : listen_fd_(listen_fd),
      port_(port),
      host_(std::move(host)),
      target_port_(target_port),
      wake_r_(wake_r),
      wake_w_(wake_w) {}

TcpProxy::~TcpProxy() {
  stop_ = true;
  (void)::write(wake_w_, "s", 1);
  if (thread_.joinable()) thread_.join();
  close_all();
  ::close(listen_fd_);
  ::close(wake_r_);
  ::close(wake_w_);
}

void TcpProxy::set(bool cut) {
  cut_ = cut;
  (void)::write(wake_w_, "c", 1);
}

void TcpProxy::close_all() {
  for (auto& [c, u] : pairs_) {
    ::close(c);
    if (u >= 0) ::close(u);
  }
  pairs_.clear();
}

void TcpProxy::accept_one() {
  const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return;
  const int u = cut_ ? -1 : connect_to(host_, target_port_);
  if (u < 0 && !cut_) {
    ::close(c);  // the target is down: so is the proxy
    return;
  }
  pairs_.emplace_back(c, u);
}

void TcpProxy::loop() {
  bool was_cut = false;
  char buf[64 * 1024];
  while (!stop_) {
    const bool cut = cut_;
    if (cut != was_cut) {
      close_all();  // a cut drops what was in flight; a heal starts afresh
      was_cut = cut;
    }
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_r_, POLLIN, 0}};
    for (const auto& [c, u] : pairs_) {
      fds.push_back({c, POLLIN, 0});
      fds.push_back({u, u >= 0 ? static_cast<short>(POLLIN) : short{0}, 0});
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) {
      while (::read(wake_r_, buf, sizeof buf) > 0) {
      }
    }
    std::vector<std::pair<int, int>> keep;
    for (size_t i = 0; i < pairs_.size(); ++i) {
      auto [c, u] = pairs_[i];
      bool open = true;
      for (int side = 0; side < 2 && open; ++side) {
        const pollfd& p = fds[2 + 2 * i + side];
        if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
        if (n <= 0) {
          open = false;
        } else if (!cut) {
          open = send_all(side == 0 ? u : c, buf, static_cast<size_t>(n));
        }  // cut: the bytes are dropped
      }
      if (open) {
        keep.emplace_back(c, u);
      } else {
        ::close(c);
        if (u >= 0) ::close(u);
      }
    }
    pairs_ = std::move(keep);
    if (fds[0].revents & POLLIN) accept_one();  // after the pairs polled above
  }
}

}  // namespace rdmarepl::kvdemo
