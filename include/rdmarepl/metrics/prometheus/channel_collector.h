// A replication channel's metrics as a prometheus::Collectable, built from the one field
// table (replication/metric_fields.h): a metric added there is exported with no other edit.
// Register it with the store's own prometheus::Exposer (RegisterCollectable), or use
// MetricsEndpoint (endpoint.h). Collect() reads the channel's atomics and knobs; it runs on
// the exposer's thread, never on the data path. The channel must outlive the collector's
// registration. Names and labels: docs/operations.md.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/tuning/knobs.h"

namespace rdmarepl::metrics {

// Where a collector reads from: any channel through ChannelCollector::of(), or functions.
struct ChannelSource {
  std::function<replication::MetricsSnapshot()> metrics;
  std::function<tuning::Knobs()> knobs;  // empty: no knob gauges
  std::string role;                      // "leader" or "follower": label `role`
  std::string node;                      // ChannelOptions::node_id: label `node`
};

class ChannelCollector final : public prometheus::Collectable {
 public:
  explicit ChannelCollector(ChannelSource source) : source_(std::move(source)) {}

  // A collector of `channel` (a ReplicationChannel<Store>), which must outlive it.
  template <class Channel>
  static std::shared_ptr<ChannelCollector> of(const Channel& channel) {
    ChannelSource s;
    s.metrics = [&channel] { return channel.metrics(); };
    s.knobs = [&channel] { return channel.knobs(); };
    s.role = std::string(to_string(channel.options().role));
    s.node = channel.options().node_id;
    return std::make_shared<ChannelCollector>(std::move(s));
  }

  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;

  // The exported name of a field: rdmarepl_ prefix, base unit, _total for counters.
  static std::string exported_name(const replication::MetricField& f);
  static std::string exported_name(const replication::HistogramField& f);
  // A per-shard histogram: rdmarepl_shard_ prefix (label shard), otherwise as above.
  static std::string exported_name(const replication::ShardHistogramField& f);

 private:
  void add_scalars(const replication::MetricsSnapshot& m,
                   std::vector<prometheus::MetricFamily>& out) const;
  void add_followers(const replication::MetricsSnapshot& m,
                     std::vector<prometheus::MetricFamily>& out) const;
  void add_shards(const replication::MetricsSnapshot& m,
                  std::vector<prometheus::MetricFamily>& out) const;
  void add_shard_histograms(const replication::MetricsSnapshot& m,
                            std::vector<prometheus::MetricFamily>& out) const;
  void add_links(const replication::MetricsSnapshot& m,
                 std::vector<prometheus::MetricFamily>& out) const;
  void add_histograms(const replication::MetricsSnapshot& m,
                      std::vector<prometheus::MetricFamily>& out) const;
  void add_knobs(const tuning::Knobs& k, std::vector<prometheus::MetricFamily>& out) const;
  [[nodiscard]] std::vector<prometheus::ClientMetric::Label> labels() const;

  ChannelSource source_;
};

}  // namespace rdmarepl::metrics
