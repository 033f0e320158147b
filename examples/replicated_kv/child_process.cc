#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::kvdemo {

namespace {
double cpu_of(const rusage& ru) noexcept {
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}
}  // namespace

double self_cpu_seconds() noexcept {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return cpu_of(ru);
}

Result<ChildProcess> ChildProcess::spawn(std::string name, const std::vector<std::string>& args,
                                         const std::string& program,
                                         const std::string& stderr_path) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return errno_error(errno, "socketpair for the control socket of " + name);
  }
  // argv is built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> full;
  full.push_back(program);
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return errno_error(err, "fork of " + name);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    // dup2 clears FD_CLOEXEC on the new descriptor; if sv[1] already is kControlFd, clear it.
    if (sv[1] == kControlFd) {
      ::fcntl(kControlFd, F_SETFD, 0);
    } else if (::dup2(sv[1], kControlFd) < 0) {
      ::_exit(127);
    }
    if (!stderr_path.empty()) {
      const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) ::_exit(127);
    }
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(sv[1]);
  ChildProcess c;
  c.name_ = std::move(name);
  c.pid_ = pid;
  c.control_ = ControlSocket(sv[0]);
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : name_(std::move(other.name_)),
      pid_(other.pid_),
      control_(std::move(other.control_)),
      cpu_seconds_(other.cpu_seconds_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    name_ = std::move(other.name_);
    pid_ = other.pid_;
    control_ = std::move(other.control_);
    cpu_seconds_ = other.cpu_seconds_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  kill_and_reap();
}

bool ChildProcess::reap(int flags, int& code) noexcept {
  int status = 0;
  rusage ru{};
  pid_t r;
  do {
    r = ::wait4(pid_, &status, flags, &ru);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  if (r == pid_) {
    cpu_seconds_ += cpu_of(ru);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    code = 255;  // not our child any more (already reaped elsewhere)
  }
  pid_ = -1;
  control_.close();
  return true;
}

void ChildProcess::kill_and_reap() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int code = 0;
  reap(0, code);
}

Result<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return Error(Errc::invalid_argument, name_ + " is not running");
  auto deadline = Deadline::after(timeout);
  int code = 0;
  for (;;) {
    if (reap(WNOHANG, code)) return code;
    if (deadline.expired()) {
      return Error(Errc::timeout, name_ + " (pid " + std::to_string(pid_) +
                                      ") did not exit within " + std::to_string(timeout.count()) +
                                      " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace rdmarepl::kvdemo
