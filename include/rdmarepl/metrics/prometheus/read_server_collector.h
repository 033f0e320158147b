// A read server's counters (reads/read_server.h, ReadServerStats) as a
// prometheus::Collectable. Register it beside the channel's collector (MetricsEndpoint::add
// or the store's own exposer); Collect() reads the server's atomics on the exposer's
// thread. The server must outlive the collector's registration. Names: docs/operations.md.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/reads/read_server.h"

namespace rdmarepl::metrics {

class ReadServerCollector final : public prometheus::Collectable {
 public:
  // `node` is the label `node` (the replica's ChannelOptions::node_id).
  ReadServerCollector(std::function<reads::ReadServerStats()> stats, std::string node)
      : stats_(std::move(stats)), node_(std::move(node)) {}

  // A collector of `server` (a ReadServer<Store>), which must outlive it.
  template <class Server>
  static std::shared_ptr<ReadServerCollector> of(const Server& server, std::string node) {
    return std::make_shared<ReadServerCollector>([&server] { return server.stats(); },
                                                 std::move(node));
  }

  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<reads::ReadServerStats()> stats_;
  std::string node_;
};

}  // namespace rdmarepl::metrics
