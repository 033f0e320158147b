#include "cpu_limit.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace rdmarepl::bench {

namespace {

constexpr unsigned kPeriodUs = 100'000;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << '\n';
  out.flush();
  if (!out)
    return Error(Errc::io_error, fmt::format("writing '{}' to {} failed ({}); the CPU limit "
                                             "needs root and a writable cgroup cpu controller",
                                             text, path, std::strerror(errno)));
  return {};
}

}  // namespace

Result<std::unique_ptr<CpuLimit>> CpuLimit::create(pid_t pid, unsigned percent) {
  if (percent == 0 || percent > 100)
    return Error(Errc::invalid_argument,
                 fmt::format("CPU limit {}% is out of range; give 1..100", percent));
  std::unique_ptr<CpuLimit> l(new CpuLimit());
  l->pid_ = pid;
  const std::string name = fmt::format("rdmarepl-bench-{}", pid);
  const unsigned quota = kPeriodUs * percent / 100;
  // cgroup v2 with the cpu controller enabled at the root, else v1's cpu hierarchy.
  std::string control;
  if (exists("/sys/fs/cgroup/cgroup.controllers") && exists("/sys/fs/cgroup/cpu.stat")) {
    l->root_ = "/sys/fs/cgroup";
    control = "cpu.max";
  } else if (exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {
    l->root_ = "/sys/fs/cgroup/cpu";
    control = "cpu.cfs_quota_us";
  } else {
    return Error(Errc::unsupported,
                 "no cgroup cpu controller is mounted (looked for /sys/fs/cgroup/cpu.stat and "
                 "/sys/fs/cgroup/cpu/cpu.cfs_quota_us); mount one to limit a process's CPU");
  }
  l->group_ = l->root_ + "/" + name;
  if (::mkdir(l->group_.c_str(), 0755) != 0 && errno != EEXIST)
    return Error(Errc::io_error, fmt::format("creating cgroup {} failed: {}; run as root",
                                             l->group_, std::strerror(errno)));
  if (control == "cpu.max") {
    RDMAREPL_TRY(write_file(l->group_ + "/cpu.max", fmt::format("{} {}", quota, kPeriodUs)));
  } else {
    RDMAREPL_TRY(write_file(l->group_ + "/cpu.cfs_period_us", std::to_string(kPeriodUs)));
    RDMAREPL_TRY(write_file(l->group_ + "/cpu.cfs_quota_us", std::to_string(quota)));
  }
  RDMAREPL_TRY(write_file(l->group_ + "/cgroup.procs", std::to_string(pid)));
  return l;
}

CpuLimit::~CpuLimit() {
  // Back to the root group (a process that has exited needs nothing), then the group goes.
  if (!root_.empty()) {
    std::ofstream out(root_ + "/cgroup.procs");
    out << pid_ << '\n';
  }
  if (!group_.empty()) (void)::rmdir(group_.c_str());
}

}  // namespace rdmarepl::bench
