// Samplers that turn process and device counters into per-window numbers for Observation.
// Both are control-plane objects: call sample() from the tuner's thread once per window.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/observation.h"

namespace rdmarepl::tuning {

// Process CPU utilisation from getrusage(RUSAGE_SELF) (user + system time) over the wall time
// between two calls, divided by the cores this process may run on (sched_getaffinity).
class CpuSampler {
 public:
  CpuSampler();
  // Utilisation (0..1) since the previous call (or construction); std::nullopt when no wall
  // time has passed or the counters could not be read.
  std::optional<double> sample();
  [[nodiscard]] int cores() const noexcept { return cores_; }

  // The arithmetic, separate so it can be checked without a busy process.
  static std::optional<double> utilization(double cpu_s, double wall_s, int cores) noexcept;

 private:
  int cores_;
  double last_cpu_s_;
  uint64_t last_wall_ns_;
};

// Raw RNIC counter totals summed over every device and port under a sysfs root
// (`/sys/class/infiniband/<dev>/ports/<n>/counters/*` and `.../hw_counters/*`).
struct DeviceCounterTotals {
  std::map<std::string, uint64_t> values;  // counter file name -> sum over ports
  // The ports' `rate` files ("100 Gb/sec (4X EDR)"), summed, in bytes per second; 0 when no
  // port states one.
  double link_bytes_per_s = 0;
};

// Bytes per second of a sysfs port `rate` ("10 Gb/sec (1X QDR)", "2.5 Gb/sec", "100 Mb/sec"),
// or std::nullopt when the text is not a rate.
std::optional<double> parse_port_rate(const std::string& text);

// Reads the counter files under `root`. A missing root or a device without counters gives an
// empty map, not an error; an unreadable counter file is skipped.
DeviceCounterTotals read_device_counters(const std::string& root);

// Rates of the counters named in DeviceRates between two calls of sample(). The first call
// (and any counter missing from either reading) gives std::nullopt.
class DeviceCounterSampler {
 public:
  explicit DeviceCounterSampler(std::string root = "/sys/class/infiniband");
  DeviceRates sample();
  // Same, with the reading and time supplied by the caller (used by tests).
  DeviceRates sample(const DeviceCounterTotals& now, uint64_t now_ns);

 private:
  std::string root_;
  std::optional<DeviceCounterTotals> last_;
  uint64_t last_ns_ = 0;
};

}  // namespace rdmarepl::tuning
