// The node's settings that RDMA replication depends on but that are not RDMA: the
// locked-memory limit, huge pages, memory overcommit, interrupt balancing and the CPU
// frequency governor. All read through a SysRoot, so a fake tree can stand in for the node.
#pragma once

#include <cstdint>
#include <limits>

#include "check.h"
#include "needs.h"
#include "sysroot.h"

namespace rdmarepl::doctor {

inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// `memlock_bytes`: the soft RLIMIT_MEMLOCK (kUnlimited for RLIM_INFINITY). CAP_IPC_LOCK is
// read from /proc/self/status.
Check check_memlock(const SysRoot& root, uint64_t memlock_bytes, const ChannelNeeds& needs);
Check check_hugepages(const SysRoot& root, const ChannelNeeds& needs);
Check check_overcommit(const SysRoot& root);
Check check_irqbalance(const SysRoot& root);
Check check_governor(const SysRoot& root);

// This process's RLIMIT_MEMLOCK soft limit.
uint64_t current_memlock_limit() noexcept;

}  // namespace rdmarepl::doctor
