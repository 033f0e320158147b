// A line-oriented control connection between the coordinating process and a role process
// (AF_UNIX stream socket). Lines are short text: "ready port=4242", "digest", ... They are
// the control plane only; no record data crosses this socket.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"

namespace rdmarepl::kvdemo {

class ControlSocket {
 public:
  ControlSocket() = default;
  explicit ControlSocket(int fd) noexcept : fd_(fd) {}
  ControlSocket(ControlSocket&& other) noexcept;
  ControlSocket& operator=(ControlSocket&& other) noexcept;
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;
  ~ControlSocket();

  // Writes `line` and a newline, whole (retries short writes and EINTR).
  Status send_line(std::string_view line);
  // The next line without its newline. Errc::timeout when no full line arrived in time;
  // Errc::connection_closed when the peer closed (or died).
  Result<std::string> read_line(std::chrono::milliseconds timeout);
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  void close() noexcept;

 private:
  bool take_line(std::string& out);

  int fd_ = -1;
  std::string buffer_;
};

// Control lines are one line: newlines (in error messages) become spaces.
std::string one_line(std::string s);
// A role's failure: sends "error message=<what>" and returns the role's exit status (1).
int fail(ControlSocket& ctl, const std::string& what);
// The message of an "error message=..." line (the whole line when it has none).
std::string error_text(const std::string& line);

// "key=value" fields of a control line: field(line, "port") -> "4242", or "" when absent.
std::string field(std::string_view line, std::string_view key);

}  // namespace rdmarepl::kvdemo
