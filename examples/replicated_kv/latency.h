// Exact latency percentiles: every sample is kept (8 bytes each, so 1M samples are 8 MB)
// and sorted once at the end. Exact values matter for p999 over short runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmarepl::kvdemo {

struct LatencySummary {
  uint64_t count = 0;
  double avg_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
  // "avg=1.2 p50=1.0 p99=3.4 p999=9.9 max=20.1 n=1000" (microseconds), and back.
  [[nodiscard]] std::string to_wire() const;
  static bool from_wire(const std::string& text, LatencySummary& out);
};

class LatencyRecorder {
 public:
  void reserve(size_t n) { samples_.reserve(n); }
  void record(uint64_t ns) { samples_.push_back(ns); }
  [[nodiscard]] size_t count() const noexcept { return samples_.size(); }
  // Sorts the samples in place; nearest-rank percentiles.
  LatencySummary summarize();

 private:
  std::vector<uint64_t> samples_;
};

}  // namespace rdmarepl::kvdemo
