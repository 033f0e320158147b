#include "host_checks.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <map>
#include <sstream>

namespace rdmarepl::doctor {
namespace {

constexpr int kCapIpcLock = 14;  // linux/capability.h

// The value of "Key:  value" in a /proc file such as status or meminfo.
std::optional<std::string> proc_field(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ':') {
      auto v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? std::string() : line.substr(v);
    }
  }
  return std::nullopt;
}

bool has_ipc_lock(const SysRoot& root) {
  auto status = root.read("/proc/self/status");
  if (!status) return false;
  auto eff = proc_field(*status, "CapEff");
  if (!eff) return false;
  try {
    return (std::stoull(*eff, nullptr, 16) >> kCapIpcLock) & 1u;
  } catch (...) {
    return false;
  }
}

uint64_t meminfo_number(const std::string& meminfo, std::string_view key) {
  auto v = proc_field(meminfo, key);
  if (!v) return 0;
  try {
    return std::stoull(*v);
  } catch (...) {
    return 0;
  }
}

}  // namespace

uint64_t current_memlock_limit() noexcept {
  rlimit r{};
  if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return r.rlim_cur;
}

Check check_memlock(const SysRoot& root, uint64_t memlock_bytes, const ChannelNeeds& needs) {
  Check c{Verdict::pass, "memlock", "", ""};
  const std::string need = fmt::format("the channel registers {} ({} shards)",
                                       human_bytes(needs.registered_bytes), needs.shards);
  if (memlock_bytes == kUnlimited) {
    c.detail = fmt::format("locked-memory limit unlimited; {}", need);
    return c;
  }
  c.detail = fmt::format("locked-memory limit {} (ulimit -l {}); {}", human_bytes(memlock_bytes),
                         memlock_bytes / 1024, need);
  if (memlock_bytes >= needs.registered_bytes) return c;
  c.advice =
      "raise the limit of the store's process: `ulimit -l unlimited`, LimitMEMLOCK=infinity "
      "in its systemd unit, or memlock in /etc/security/limits.conf; otherwise ibv_reg_mr "
      "fails with ENOMEM";
  if (has_ipc_lock(root)) {
    c.verdict = Verdict::warn;
    c.detail +=
        "; this process holds CAP_IPC_LOCK, which lifts the limit, but a store without it "
        "cannot register its memory";
  } else {
    c.verdict = Verdict::fail;
  }
  return c;
}

Check check_hugepages(const SysRoot& root, const ChannelNeeds& needs) {
  Check c{Verdict::pass, "huge pages", "", ""};
  auto meminfo = root.read("/proc/meminfo");
  if (!meminfo) {
    c.verdict = Verdict::warn;
    c.detail = "cannot read /proc/meminfo";
    c.advice = "check that /proc is mounted";
    return c;
  }
  const uint64_t total = meminfo_number(*meminfo, "HugePages_Total");
  const uint64_t free_pages = meminfo_number(*meminfo, "HugePages_Free");
  const uint64_t page_kb = std::max<uint64_t>(1, meminfo_number(*meminfo, "Hugepagesize"));
  const uint64_t wanted = (needs.registered_bytes + page_kb * 1024 - 1) / (page_kb * 1024);
  c.detail = fmt::format("{} huge pages of {} reserved, {} free; the channel's arenas want {}",
                         total, human_bytes(page_kb * 1024), free_pages, wanted);
  if (free_pages >= wanted) return c;
  c.verdict = Verdict::warn;
  c.detail += total == 0 ? " (arenas fall back to 4 KiB pages: more TLB misses and NIC "
                           "translation entries)"
                         : " (the rest of the arenas use 4 KiB pages)";
  c.advice = fmt::format(
      "reserve them: `sysctl vm.nr_hugepages={}` (vm.nr_hugepages in "
      "/etc/sysctl.d/ to keep it)",
      total - free_pages + wanted);
  return c;
}

Check check_overcommit(const SysRoot& root) {
  Check c{Verdict::pass, "vm.overcommit_memory", "", ""};
  auto v = root.read("/proc/sys/vm/overcommit_memory");
  if (!v) {
    c.verdict = Verdict::warn;
    c.detail = "cannot read /proc/sys/vm/overcommit_memory";
    c.advice = "check that /proc is mounted";
    return c;
  }
  c.detail = fmt::format("vm.overcommit_memory = {}", *v);
  if (*v == "0" || *v == "1") return c;
  c.verdict = Verdict::warn;
  c.detail +=
      " (strict accounting: mapping the registered arenas can fail with ENOMEM, and "
      "registration with EINVAL)";
  c.advice = "`sysctl vm.overcommit_memory=0`, or raise vm.overcommit_ratio to cover the pools";
  return c;
}

Check check_irqbalance(const SysRoot& root) {
  Check c{Verdict::pass, "irqbalance", "", ""};
  for (const auto& pid : root.list("/proc")) {
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto comm = root.read("/proc/" + pid + "/comm");
    if (comm && *comm == "irqbalance") {
      c.detail = fmt::format("irqbalance is running (pid {})", pid);
      return c;
    }
  }
  c.verdict = Verdict::warn;
  c.detail = "irqbalance is not running: the NIC's completion interrupts may all land on one CPU";
  c.advice =
      "`systemctl enable --now irqbalance`, or pin the NIC's IRQs (/proc/irq/*/smp_affinity) "
      "to cores of its NUMA node";
  return c;
}

Check check_governor(const SysRoot& root) {
  Check c{Verdict::pass, "cpu governor", "", ""};
  std::map<std::string, int> seen;
  for (const auto& cpu : root.list("/sys/devices/system/cpu")) {
    if (cpu.size() < 4 || cpu.compare(0, 3, "cpu") != 0 ||
        cpu.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    auto g = root.read("/sys/devices/system/cpu/" + cpu + "/cpufreq/scaling_governor");
    if (g) ++seen[*g];
  }
  if (seen.empty()) {
    c.verdict = Verdict::warn;
    c.detail =
        "no cpufreq interface (/sys/devices/system/cpu/cpu*/cpufreq): the firmware or "
        "hypervisor sets the frequency";
    c.advice = "choose the performance (or maximum performance) power profile in the firmware";
    return c;
  }
  std::string list;
  for (const auto& [name, n] : seen)
    list += fmt::format("{}{} on {} CPUs", list.empty() ? "" : ", ", name, n);
  c.detail = fmt::format("scaling governor: {}", list);
  if (seen.size() == 1 && seen.begin()->first == "performance") return c;
  c.verdict = Verdict::warn;
  c.detail += " (frequency ramps add latency to polling threads)";
  c.advice = "`cpupower frequency-set -g performance`";
  return c;
}

}  // namespace rdmarepl::doctor
