#include "control_socket.h"

#include <algorithm>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::kvdemo {

ControlSocket::ControlSocket(ControlSocket&& other) noexcept
    : fd_(other.fd_), buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
}

ControlSocket& ControlSocket::operator=(ControlSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    buffer_ = std::move(other.buffer_);
    other.fd_ = -1;
  }
  return *this;
}

ControlSocket::~ControlSocket() {
  close();
}

void ControlSocket::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status ControlSocket::send_line(std::string_view line) {
  std::string data(line);
  data.push_back('\n');
  size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL: a peer that died is an error here, not a SIGPIPE that ends this process.
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "control socket write of '" + std::string(line) + "'");
    }
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

bool ControlSocket::take_line(std::string& out) {
  auto nl = buffer_.find('\n');
  if (nl == std::string::npos) return false;
  out = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return true;
}

Result<std::string> ControlSocket::read_line(std::chrono::milliseconds timeout) {
  std::string line;
  if (take_line(line)) return line;
  auto deadline = Deadline::after(timeout);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "control socket poll");
    }
    if (r == 0) {
      return Error(Errc::timeout, "no control message within " + std::to_string(timeout.count()) +
                                      " ms; the other process is stuck or busy");
    }
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno_error(errno, "control socket read");
    }
    if (n == 0) {
      return Error(Errc::connection_closed,
                   "the other process closed its control socket (it exited or was killed)");
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    if (take_line(line)) return line;
  }
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

int fail(ControlSocket& ctl, const std::string& what) {
  (void)ctl.send_line("error message=" + one_line(what));
  return 1;
}

std::string error_text(const std::string& line) {
  auto pos = line.find("message=");
  return pos == std::string::npos ? line : line.substr(pos + 8);
}

std::string field(std::string_view line, std::string_view key) {
  size_t pos = 0;
  while (pos < line.size()) {
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    std::string_view tok = line.substr(pos, end - pos);
    if (tok.size() > key.size() && tok.substr(0, key.size()) == key && tok[key.size()] == '=') {
      return std::string(tok.substr(key.size() + 1));
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace rdmarepl::kvdemo
