// The YCSB driver's store (leader and followers, in this process or in follower processes)
// and the process CPU reading that a follower process serves to the client.
#pragma once

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "generators.h"
#include "rdmarepl/replication/record.h"

namespace rdmarepl::ycsb {

// User + system CPU seconds of this process (every thread) so far.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// A key no workload reads or writes (workload keys are "user<hash>"): a follower process's
// store answers it with its process's CPU microseconds, in decimal, so that the client can
// take every process's CPU over exactly its timed window (docs/benchmarks.md, "YCSB").
inline constexpr std::string_view kCpuKey = "#ycsb-process-cpu-us";

inline std::string key_of(uint64_t i) {
  return fmt::format("user{}", fnv64(i));
}

// A store whose get() may run while apply() runs.
struct Store {
  mutable std::shared_mutex mu;
  std::unordered_map<std::string, std::string> data;
  void apply(const replication::Record& r) {
    std::unique_lock lock(mu);
    if (r.op == replication::Op::put)
      data[std::string(r.key)].assign(r.value);
    else
      data.erase(std::string(r.key));
  }
  bool get(std::string_view key, std::string& out) const {
    if (key == kCpuKey) {
      out = fmt::format("{:.0f}", process_cpu_seconds() * 1e6);
      return true;
    }
    std::shared_lock lock(mu);
    auto it = data.find(std::string(key));
    if (it == data.end()) return false;
    out.assign(it->second);
    return true;
  }
};

// The CPU seconds a kCpuKey value carries, or nullopt when it is not a number.
inline std::optional<double> parse_cpu_value(const std::string& value) {
  char* end = nullptr;
  const double us = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size()) return std::nullopt;
  return us * 1e-6;
}

}  // namespace rdmarepl::ycsb
