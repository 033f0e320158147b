// A role process: this same executable started again with role arguments, connected to
// its parent by a control socket. Owns the process: the destructor kills and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "control_socket.h"
#include "rdmarepl/core/result.h"

namespace rdmarepl::kvdemo {

// The fd number at which a role process finds its end of the control socket.
inline constexpr int kControlFd = 3;

class ChildProcess {
 public:
  // Runs `program` (by default this executable) with `args` (argv[1..]); the child's control
  // socket is fd kControlFd, its stderr goes to `stderr_path` when one is given. The child is
  // SIGKILLed by the kernel if this process dies (PR_SET_PDEATHSIG).
  static Result<ChildProcess> spawn(std::string name, const std::vector<std::string>& args,
                                    const std::string& program = "/proc/self/exe",
                                    const std::string& stderr_path = {});

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
  ControlSocket& control() noexcept { return control_; }

  // SIGKILL, then reap. Safe on a process that already exited.
  void kill_and_reap() noexcept;
  // Waits up to `timeout` for the process to exit. Returns its exit code, or 128 + signal
  // when a signal ended it. Errc::timeout when it is still running (it keeps running).
  Result<int> wait(std::chrono::milliseconds timeout);
  // User + system CPU seconds of the process, known once it was reaped.
  [[nodiscard]] double cpu_seconds() const noexcept { return cpu_seconds_; }

 private:
  bool reap(int flags, int& code) noexcept;

  std::string name_;
  pid_t pid_ = -1;
  ControlSocket control_;
  double cpu_seconds_ = 0;
};

// User + system CPU seconds used so far by this process (all threads).
double self_cpu_seconds() noexcept;

}  // namespace rdmarepl::kvdemo
