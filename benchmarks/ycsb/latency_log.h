// Every latency of one operation type in a run, kept exactly: the driver's percentiles are
// set beside redis-benchmark's (an HdrHistogram, 3 significant digits), and the library's
// metrics::Histogram reports a bucket's upper bound, up to 12.5% above the true value.
// record() takes a lock: client threads record at most a few hundred thousand times a
// second, and the lock is nearly always free.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rdmarepl::ycsb {

struct LatencySummary {
  uint64_t count = 0;
  double mean_ns = 0;
  // Nearest-rank percentiles: the smallest latency with at least q of them at or below.
  uint64_t p50_ns = 0, p95_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
};

class LatencyLog {
 public:
  void reserve(size_t n) { ns_.reserve(n); }
  void record(uint64_t ns) {
    std::lock_guard lock(mu_);
    ns_.push_back(ns);
  }
  // After the run (sorts what was recorded).
  LatencySummary summary() {
    std::lock_guard lock(mu_);
    LatencySummary s;
    s.count = ns_.size();
    if (ns_.empty()) return s;
    std::sort(ns_.begin(), ns_.end());
    double sum = 0;
    for (uint64_t v : ns_) sum += static_cast<double>(v);
    s.mean_ns = sum / static_cast<double>(ns_.size());
    auto at = [&](double q) {
      const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(ns_.size())));
      return ns_[std::clamp<size_t>(rank, 1, ns_.size()) - 1];
    };
    s.p50_ns = at(0.50);
    s.p95_ns = at(0.95);
    s.p99_ns = at(0.99);
    s.p999_ns = at(0.999);
    s.max_ns = ns_.back();
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<uint64_t> ns_;
};

}  // namespace rdmarepl::ycsb
