#include "latency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

namespace rdmarepl::kvdemo {

LatencySummary LatencyRecorder::summarize() {
  LatencySummary s;
  s.count = samples_.size();
  if (samples_.empty()) return s;
  std::sort(samples_.begin(), samples_.end());
  long double sum = 0;
  for (uint64_t v : samples_) sum += static_cast<long double>(v);
  auto at = [&](double q) {
    // Nearest rank: the smallest sample with at least q of all samples at or below it.
    auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples_.size())));
    rank = std::clamp<size_t>(rank, 1, samples_.size());
    return static_cast<double>(samples_[rank - 1]) / 1000.0;
  };
  s.avg_us = static_cast<double>(sum / static_cast<long double>(samples_.size())) / 1000.0;
  s.p50_us = at(0.50);
  s.p99_us = at(0.99);
  s.p999_us = at(0.999);
  s.max_us = static_cast<double>(samples_.back()) / 1000.0;
  return s;
}

std::string LatencySummary::to_wire() const {
  return fmt::format("avg={:.3f} p50={:.3f} p99={:.3f} p999={:.3f} max={:.3f} n={}", avg_us, p50_us,
                     p99_us, p999_us, max_us, count);
}

bool LatencySummary::from_wire(const std::string& text, LatencySummary& out) {
  double count = 0;
  const std::pair<const char*, double*> fields[] = {{"avg", &out.avg_us}, {"p50", &out.p50_us},
                                                    {"p99", &out.p99_us}, {"p999", &out.p999_us},
                                                    {"max", &out.max_us}, {"n", &count}};
  std::istringstream in(text);
  std::string token;
  int seen = 0;
  while (in >> token) {
    auto eq = token.find('=');
    if (eq == std::string::npos) continue;
    for (const auto& [name, dest] : fields) {
      if (token.compare(0, eq, name) == 0 && eq == std::strlen(name)) {
        *dest = std::strtod(token.c_str() + eq + 1, nullptr);
        ++seen;
      }
    }
  }
  out.count = static_cast<uint64_t>(count);
  return seen == 6;
}

}  // namespace rdmarepl::kvdemo
