#include "rdmarepl/metrics/prometheus/process_collector.h"

#include <cstdlib>
#include <fstream>

namespace rdmarepl::metrics {

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  struct Field {
    const char* key;  // the /proc/self/status line, in kB
    const char* name;
    const char* help;
  };
  static constexpr Field kFields[] = {
      {"VmRSS:", "rdmarepl_process_resident_memory_bytes", "resident memory of the process"},
      {"VmLck:", "rdmarepl_process_locked_memory_bytes",
       "locked (pinned) memory of the process, registered memory included"},
  };
  std::vector<prometheus::MetricFamily> out;
  std::ifstream in(status_path_);
  std::string line;
  while (in && std::getline(in, line)) {
    for (const auto& f : kFields) {
      if (line.rfind(f.key, 0) != 0) continue;
      prometheus::MetricFamily fam;
      fam.name = f.name;
      fam.help = f.help;
      fam.type = prometheus::MetricType::Gauge;
      prometheus::ClientMetric m;
      m.label = {{"node", node_}};
      m.gauge.value = std::strtod(line.c_str() + std::string(f.key).size(), nullptr) * 1024;
      fam.metric.push_back(std::move(m));
      out.push_back(std::move(fam));
    }
  }
  return out;
}

}  // namespace rdmarepl::metrics
