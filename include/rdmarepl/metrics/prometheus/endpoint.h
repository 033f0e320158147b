// A ready HTTP endpoint for stores that have no Prometheus exposer of their own: serves
// GET /metrics in the Prometheus text format from the collectables added to it.
//
//   auto ep = metrics::MetricsEndpoint::start("0.0.0.0:9464");
//   (*ep)->add(metrics::ChannelCollector::of(channel));
//   (*ep)->add(std::make_shared<metrics::RnicCollector>());
//
// Destroy the endpoint before the channels its collectors read.
#pragma once

#include <prometheus/collectable.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"

namespace prometheus {
class Exposer;
}

namespace rdmarepl::metrics {

class MetricsEndpoint {
 public:
  // `bind_address` is "host:port" or "port"; port 0 picks a free one (see port()). Fails,
  // saying what to do, when the address cannot be bound.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& bind_address);
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  ~MetricsEndpoint();

  // Serves `c` from now on; the endpoint keeps it alive.
  void add(std::shared_ptr<prometheus::Collectable> c);
  [[nodiscard]] uint16_t port() const;

 private:
  MetricsEndpoint() = default;

  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // last: stops serving before the above go
};

}  // namespace rdmarepl::metrics
