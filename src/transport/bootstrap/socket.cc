#include "transport/bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmarepl::transport::bootstrap {
namespace {

// getaddrinfo for a numeric or named host; `passive` for bind addresses.
Result<addrinfo*> resolve(const Endpoint& where, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  std::string port = std::to_string(where.port);
  const char* host = where.host.empty() ? nullptr : where.host.c_str();
  int rc = ::getaddrinfo(host, port.c_str(), &hints, &list);
  if (rc != 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("cannot resolve {}: {}; check the host name or use a numeric address",
                             where.to_string(), ::gai_strerror(rc)));
  }
  return list;
}

std::string format_address(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &ss, sizeof in);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    port = ntohs(in.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &ss, sizeof in6);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
    port = ntohs(in6.sin6_port);
  }
  return fmt::format("{}:{}", host, port);
}

// Waits for `events` on fd until the deadline. Returns ok when ready.
Status wait_fd(int fd, short events, Deadline deadline, std::string_view what,
               std::string_view peer) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (rc > 0) return ok_status();
    if (rc == 0) {
      return Error(Errc::timeout,
                   fmt::format("{} with {} timed out; check that the peer is alive and reachable, "
                               "or raise the timeout",
                               what, peer));
    }
    if (errno != EINTR) return errno_error(errno, fmt::format("poll() for {} with {}", what, peer));
  }
}

}  // namespace

void Fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status tune_socket(int fd, int buffer_bytes) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    return errno_error(errno, "setsockopt(TCP_NODELAY)");
  if (buffer_bytes > 0) {
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes) != 0 ||
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes) != 0)
      return errno_error(errno, fmt::format("setsockopt(SO_SNDBUF/SO_RCVBUF, {})", buffer_bytes));
  }
  return ok_status();
}

Result<Fd> listen_tcp(const Endpoint& where, int backlog) {
  auto list = resolve(where, true);
  if (!list) return std::move(list).error();
  Error last(Errc::invalid_argument, fmt::format("{} resolves to no address", where.to_string()));
  for (addrinfo* ai = *list; ai != nullptr; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = errno_error(errno, "socket()");
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = errno_error(errno, fmt::format("bind({})", where.to_string()));
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = errno_error(errno, fmt::format("listen({})", where.to_string()));
      continue;
    }
    ::freeaddrinfo(*list);
    return fd;
  }
  ::freeaddrinfo(*list);
  return last;
}

Result<Fd> accept_tcp(int listen_fd, Deadline deadline) {
  for (;;) {
    Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.valid()) {
      RDMAREPL_TRY(tune_socket(fd.get()));
      return fd;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) return errno_error(err, "accept()");
    RDMAREPL_TRY(wait_fd(listen_fd, POLLIN, deadline, "waiting for a connection", "any peer"));
  }
}

Result<Fd> connect_tcp(const Endpoint& where, Deadline deadline) {
  auto list = resolve(where, false);
  if (!list) return std::move(list).error();
  Error last(Errc::invalid_argument, fmt::format("{} resolves to no address", where.to_string()));
  for (addrinfo* ai = *list; ai != nullptr; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = errno_error(errno, "socket()");
      continue;
    }
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno != EINPROGRESS) {
      last = errno_error(errno, fmt::format("connect({})", where.to_string()));
      continue;
    }
    if (rc != 0) {
      auto ready = wait_fd(fd.get(), POLLOUT, deadline, "connecting", where.to_string());
      if (!ready) {
        last = std::move(ready).error();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last = errno_error(err, fmt::format("connect({})", where.to_string()));
        continue;
      }
    }
    auto tuned = tune_socket(fd.get());
    if (!tuned) {
      last = std::move(tuned).error();
      continue;
    }
    ::freeaddrinfo(*list);
    return fd;
  }
  ::freeaddrinfo(*list);
  return last;
}

Result<Endpoint> local_endpoint(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return errno_error(errno, "getsockname()");
  std::string text = format_address(ss);
  auto colon = text.rfind(':');
  return Endpoint{text.substr(0, colon), static_cast<uint16_t>(std::stoul(text.substr(colon + 1)))};
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "<unknown peer>";
  return format_address(ss);
}

Status send_all(int fd, std::span<const uint8_t> bytes, Deadline deadline, std::string_view peer) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RDMAREPL_TRY(wait_fd(fd, POLLOUT, deadline, "sending", peer));
      continue;
    }
    int err = errno;
    if (err == EPIPE || err == ECONNRESET)
      return Error(Errc::connection_closed,
                   fmt::format("{} closed the connection while we were sending; check the peer's "
                               "log for why it refused us",
                               peer));
    return errno_error(err, fmt::format("send() to {}", peer));
  }
  return ok_status();
}

Status recv_exact(int fd, std::span<uint8_t> out, Deadline deadline, std::string_view peer) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      return Error(Errc::connection_closed,
                   fmt::format("{} closed the connection after {} of {} expected bytes; check the "
                               "peer's log for why it refused us",
                               peer, done, out.size()));
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RDMAREPL_TRY(wait_fd(fd, POLLIN, deadline, "receiving", peer));
      continue;
    }
    return errno_error(errno, fmt::format("recv() from {}", peer));
  }
  return ok_status();
}

}  // namespace rdmarepl::transport::bootstrap
