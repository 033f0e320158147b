#include "rdmarepl/tuning/samplers.h"

#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::tuning {

namespace {

int allowed_cores() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

double process_cpu_seconds() noexcept {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

}  // namespace

CpuSampler::CpuSampler()
    : cores_(allowed_cores()), last_cpu_s_(process_cpu_seconds()), last_wall_ns_(mono_ns()) {}

std::optional<double> CpuSampler::utilization(double cpu_s, double wall_s, int cores) noexcept {
  if (!(wall_s > 0) || cores <= 0 || cpu_s < 0) return std::nullopt;
  double u = cpu_s / (wall_s * cores);
  return u > 1.0 ? 1.0 : u;  // rusage granularity can overshoot slightly on short windows
}

std::optional<double> CpuSampler::sample() {
  double cpu = process_cpu_seconds();
  uint64_t now = mono_ns();
  std::optional<double> u;
  if (cpu >= 0 && last_cpu_s_ >= 0) {
    u = utilization(cpu - last_cpu_s_, static_cast<double>(now - last_wall_ns_) * 1e-9, cores_);
  }
  last_cpu_s_ = cpu;
  last_wall_ns_ = now;
  return u;
}

namespace {

void add_counters(const std::filesystem::path& dir, DeviceCounterTotals& out) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::ifstream in(e.path());
    uint64_t v = 0;
    if (!(in >> v)) continue;  // unreadable or not a number: skip, never count it as zero
    out.values[e.path().filename().string()] += v;
  }
}

}  // namespace

std::optional<double> parse_port_rate(const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  std::string unit;
  if (!(in >> value >> unit) || !(value > 0)) return std::nullopt;
  if (unit == "Gb/sec") return value * 1e9 / 8;
  if (unit == "Mb/sec") return value * 1e6 / 8;
  return std::nullopt;
}

DeviceCounterTotals read_device_counters(const std::string& root) {
  namespace fs = std::filesystem;
  DeviceCounterTotals out;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator(root, ec)) {
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec)) {
      add_counters(port.path() / "counters", out);
      add_counters(port.path() / "hw_counters", out);
      std::ifstream rate_file(port.path() / "rate");
      std::string rate;
      if (std::getline(rate_file, rate))
        if (auto r = parse_port_rate(rate)) out.link_bytes_per_s += *r;
    }
  }
  return out;
}

DeviceCounterSampler::DeviceCounterSampler(std::string root) : root_(std::move(root)) {}

DeviceRates DeviceCounterSampler::sample() {
  return sample(read_device_counters(root_), mono_ns());
}

DeviceRates DeviceCounterSampler::sample(const DeviceCounterTotals& now, uint64_t now_ns) {
  DeviceRates r;
  if (last_ && now_ns > last_ns_) {
    double dt = static_cast<double>(now_ns - last_ns_) * 1e-9;
    // Rate of the sum of `names`, or nullopt when none of them is present in both readings.
    auto rate = [&](std::initializer_list<const char*> names,
                    double scale) -> std::optional<double> {
      bool any = false;
      double delta = 0;
      for (const char* n : names) {
        auto a = last_->values.find(n);
        auto b = now.values.find(n);
        if (a == last_->values.end() || b == now.values.end()) continue;
        any = true;
        // A counter that went backwards was reset (driver reload): count from zero.
        delta += static_cast<double>(b->second >= a->second ? b->second - a->second : b->second);
      }
      if (!any) return std::nullopt;
      return delta * scale / dt;
    };
    // port_xmit_data / port_rcv_data count 4-byte words (IBTA PortCounters).
    r.tx_bytes_per_s = rate({"port_xmit_data"}, 4.0);
    r.rx_bytes_per_s = rate({"port_rcv_data"}, 4.0);
    r.tx_wait_per_s = rate({"port_xmit_wait"}, 1.0);
    // Hardware NICs (mlx5's names) and Soft-RoCE (rxe: the requester's retries after a
    // timeout or a sequence NAK, and the RNR NAKs it received) name these differently.
    r.retransmits_per_s = rate({"packet_seq_err", "local_ack_timeout_err", "out_of_sequence",
                                "implied_nak_seq_err", "completer_retry_err"},
                               1.0);
    r.rnr_naks_per_s = rate({"rnr_nak_retry_err", "rcvd_rnr_err"}, 1.0);
    if (r.tx_bytes_per_s && now.link_bytes_per_s > 0)
      r.link_utilization = *r.tx_bytes_per_s / now.link_bytes_per_s;
  }
  last_ = now;
  last_ns_ = now_ns;
  return r;
}

}  // namespace rdmarepl::tuning
