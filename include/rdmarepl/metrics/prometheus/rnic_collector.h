// The RDMA NICs' own counters as a prometheus::Collectable, read from sysfs on each scrape
// (never on the data path): for every device and port under <root>/<dev>/ports/<port>/,
// every file in counters/ and hw_counters/, the port state, physical state, rate and, on
// Ethernet (RoCE) ports, the netdev MTU and the active RDMA MTU it allows. Labelled by
// `device` and `port`. A host without RDMA devices exports nothing (no error). Names follow
// node_exporter's infiniband collector where it has one; see docs/operations.md.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace rdmarepl::metrics {

class RnicCollector final : public prometheus::Collectable {
 public:
  // `root` is /sys/class/infiniband, `net_root` /sys/class/net (tests pass a fake tree).
  explicit RnicCollector(std::string root = "/sys/class/infiniband",
                         std::string net_root = "/sys/class/net")
      : root_(std::move(root)), net_root_(std::move(net_root)) {}

  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;

  // The active MTU the kernel gives a RoCE port on a netdev of `netdev_mtu` bytes: the
  // largest IB MTU (256 .. 4096) that fits with the RoCE v2 headers (96 bytes); 0 if none.
  static unsigned roce_active_mtu(unsigned netdev_mtu) noexcept;

 private:
  std::string root_;
  std::string net_root_;
};

}  // namespace rdmarepl::metrics
