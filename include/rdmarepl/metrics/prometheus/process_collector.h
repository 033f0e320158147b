// The process's memory as a prometheus::Collectable: resident and locked (pinned, as
// registered memory is) bytes from /proc/self/status, read on each scrape. Labelled by
// `node`, so that one dashboard shows every process of a replica set.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace rdmarepl::metrics {

class ProcessCollector final : public prometheus::Collectable {
 public:
  explicit ProcessCollector(std::string node, std::string status_path = "/proc/self/status")
      : node_(std::move(node)), status_path_(std::move(status_path)) {}

  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string node_;
  std::string status_path_;
};

}  // namespace rdmarepl::metrics
