// A CPU bandwidth limit on a process, for experiments that move the environment under a
// running cluster (rdmarepl-bench --shift): the process goes into a cgroup of its own whose
// CFS quota is `percent` of one CPU per 100 ms period: `cpu.max` on cgroup v2, or
// `cpu.cfs_quota_us` / `cpu.cfs_period_us` on v1's cpu controller. The destructor moves the
// process back to the root group and removes the group. Needs root and a mounted cpu
// controller; otherwise create() says which.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "rdmarepl/core/result.h"

namespace rdmarepl::bench {

class CpuLimit {
 public:
  static Result<std::unique_ptr<CpuLimit>> create(pid_t pid, unsigned percent);
  ~CpuLimit();
  CpuLimit(const CpuLimit&) = delete;
  CpuLimit& operator=(const CpuLimit&) = delete;

  [[nodiscard]] const std::string& group() const noexcept { return group_; }

 private:
  CpuLimit() = default;
  std::string root_;   // the hierarchy's root (its cgroup.procs takes the process back)
  std::string group_;  // the group made for the process
  pid_t pid_ = -1;
};

}  // namespace rdmarepl::bench
