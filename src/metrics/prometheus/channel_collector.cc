#include "rdmarepl/metrics/prometheus/channel_collector.h"

#include <string_view>

#include "rdmarepl/metrics/prometheus/histogram_buckets.h"

namespace rdmarepl::metrics {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr std::string_view kPrefix = "rdmarepl_";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Nanoseconds are exported as seconds (a `_ns` name becomes `_seconds`); everything else
// keeps its unit and scale.
double scale_of(std::string_view unit) {
  return unit == "nanoseconds" ? 1e-9 : 1.0;
}

MetricFamily family(std::string name, std::string_view help, std::string_view unit,
                    MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::string(help) + " (" + std::string(unit) + ")";
  f.type = type;
  return f;
}

ClientMetric gauge(std::vector<ClientMetric::Label> labels, double v) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

ClientMetric counter(std::vector<ClientMetric::Label> labels, double v) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = v;
  return m;
}

// A counter or gauge sample, as `type` says.
ClientMetric sample(MetricType type, std::vector<ClientMetric::Label> labels, double v) {
  return type == MetricType::Counter ? counter(std::move(labels), v) : gauge(std::move(labels), v);
}

}  // namespace

std::string ChannelCollector::exported_name(const replication::MetricField& f) {
  std::string_view name = f.name;
  std::string base;
  // bytes_replicated -> replicated_bytes: the unit goes last, before _total.
  if (f.unit == "bytes" && starts_with(name, "bytes_")) {
    base = std::string(name.substr(6)) + "_bytes";
  } else {
    base = std::string(name);
  }
  return std::string(kPrefix) + base + (f.kind == replication::MetricKind::counter ? "_total" : "");
}

std::string ChannelCollector::exported_name(const replication::HistogramField& f) {
  std::string_view name = f.name;
  if (f.unit == "nanoseconds" && ends_with(name, "_ns")) {
    return std::string(kPrefix) + std::string(name.substr(0, name.size() - 3)) + "_seconds";
  }
  return std::string(kPrefix) + std::string(name);
}

std::string ChannelCollector::exported_name(const replication::ShardHistogramField& f) {
  // ack_latency_ns -> rdmarepl_shard_ack_latency_seconds
  const std::string whole =
      exported_name(replication::HistogramField{f.name, f.total, f.unit, f.help});
  return std::string(kPrefix) + "shard_" + whole.substr(kPrefix.size());
}

std::vector<ClientMetric::Label> ChannelCollector::labels() const {
  return {{"role", source_.role}, {"node", source_.node}};
}

std::vector<MetricFamily> ChannelCollector::Collect() const {
  std::vector<MetricFamily> out;
  const replication::MetricsSnapshot m = source_.metrics();
  add_scalars(m, out);
  add_followers(m, out);
  add_shards(m, out);
  add_histograms(m, out);
  if (source_.knobs) add_knobs(source_.knobs(), out);
  return out;
}

void ChannelCollector::add_scalars(const replication::MetricsSnapshot& m,
                                   std::vector<MetricFamily>& out) const {
  for (const auto& f : replication::kMetricFields) {
    const bool counter = f.kind == replication::MetricKind::counter;
    auto fam =
        family(exported_name(f), f.help, f.unit, counter ? MetricType::Counter : MetricType::Gauge);
    ClientMetric c;
    c.label = labels();
    const auto v = static_cast<double>(m.*f.member);
    if (counter) {
      c.counter.value = v;
    } else {
      c.gauge.value = v;
    }
    fam.metric.push_back(std::move(c));
    out.push_back(std::move(fam));
  }
}

void ChannelCollector::add_followers(const replication::MetricsSnapshot& m,
                                     std::vector<MetricFamily>& out) const {
  const uint32_t n = m.followers < replication::kMaxFollowers ? static_cast<uint32_t>(m.followers)
                                                              : replication::kMaxFollowers;
  if (n == 0) return;
  auto lag = family("rdmarepl_follower_lag_records",
                    "leader: records replicated to a follower and not yet acknowledged by it",
                    "records", MetricType::Gauge);
  auto lag_bytes = family("rdmarepl_follower_lag_bytes",
                          "leader: bytes of sealed batches a follower has not acknowledged, "
                          "over the retained windows",
                          "bytes", MetricType::Gauge);
  auto up =
      family("rdmarepl_follower_connected", "leader: 1 while the connection to a follower is up",
             "boolean", MetricType::Gauge);
  for (uint32_t i = 0; i < n; ++i) {
    auto l = labels();
    l.push_back({"follower", std::to_string(i)});
    lag.metric.push_back(gauge(l, static_cast<double>(m.follower_lag[i])));
    lag_bytes.metric.push_back(gauge(l, static_cast<double>(m.follower_lag_bytes[i])));
    up.metric.push_back(gauge(l, m.follower_connected[i] ? 1.0 : 0.0));
  }
  out.push_back(std::move(lag));
  out.push_back(std::move(lag_bytes));
  out.push_back(std::move(up));
}

namespace {

// The series per shard: MetricsSnapshot's shard_* vectors (entry = shard), named by role (a
// role with no name exports none). A vector shorter than shard_seq exports none of its
// entries past its end, and a family with no series is left out.
struct ShardSeries {
  const char* leader;
  const char* leader_help;
  const char* follower;
  const char* follower_help;
  const char* unit;
  MetricType type;
  const std::vector<uint64_t> replication::MetricsSnapshot::*values;
};
constexpr ShardSeries kShardSeries[] = {
    {"rdmarepl_shard_last_seq", "leader: the shard's last seq assigned", "rdmarepl_shard_last_seq",
     "follower: the shard's last seq applied", "seq", MetricType::Gauge,
     &replication::MetricsSnapshot::shard_seq},
    {"rdmarepl_shard_lag_records",
     "leader: records of the shard the slowest follower has not acknowledged", nullptr, nullptr,
     "records", MetricType::Gauge, &replication::MetricsSnapshot::shard_lag},
    {"rdmarepl_shard_records_replicated_total", "leader: records accepted on the shard",
     "rdmarepl_shard_records_applied_total",
     "follower: records of the shard applied (duplicates excluded)", "records", MetricType::Counter,
     &replication::MetricsSnapshot::shard_records},
    {"rdmarepl_shard_replicated_bytes_total", "leader: encoded record bytes accepted on the shard",
     "rdmarepl_shard_applied_bytes_total",
     "follower: encoded record bytes of the shard applied (duplicates excluded)", "bytes",
     MetricType::Counter, &replication::MetricsSnapshot::shard_bytes},
    {"rdmarepl_shard_batches_sealed_total", "leader: batches closed on the shard",
     "rdmarepl_shard_batches_applied_total", "follower: batches of the shard applied", "batches",
     MetricType::Counter, &replication::MetricsSnapshot::shard_batches},
    {"rdmarepl_shard_window_stalls_total",
     "leader: replicate() waited for the shard's retained window", nullptr, nullptr, "events",
     MetricType::Counter, &replication::MetricsSnapshot::shard_window_stalls},
};

}  // namespace

void ChannelCollector::add_shards(const replication::MetricsSnapshot& m,
                                  std::vector<MetricFamily>& out) const {
  const size_t shards = m.shard_seq.size();
  if (shards == 0) return;
  const bool leader = source_.role == "leader";
  for (const auto& series : kShardSeries) {
    const char* name = leader ? series.leader : series.follower;
    if (name == nullptr) continue;
    auto fam =
        family(name, leader ? series.leader_help : series.follower_help, series.unit, series.type);
    const auto& values = m.*series.values;
    for (size_t i = 0; i < shards && i < values.size(); ++i) {
      auto l = labels();
      l.push_back({"shard", std::to_string(i)});
      fam.metric.push_back(sample(series.type, std::move(l), static_cast<double>(values[i])));
    }
    if (!fam.metric.empty()) out.push_back(std::move(fam));
  }
  add_shard_histograms(m, out);
  add_links(m, out);
}

void ChannelCollector::add_shard_histograms(const replication::MetricsSnapshot& m,
                                            std::vector<MetricFamily>& out) const {
  for (const auto& f : replication::kShardHistogramFields) {
    const auto& shards = m.*f.shards;
    if (shards.empty()) continue;
    auto fam = family(exported_name(f), std::string(f.help) + ", per shard",
                      f.unit == "nanoseconds" ? "seconds" : f.unit, MetricType::Histogram);
    for (size_t i = 0; i < shards.size(); ++i) {
      ClientMetric c;
      c.label = labels();
      c.label.push_back({"shard", std::to_string(i)});
      c.histogram = to_prometheus(shards[i], scale_of(f.unit));
      fam.metric.push_back(std::move(c));
    }
    out.push_back(std::move(fam));
  }
}

namespace {

// The leader's series per follower and shard: MetricsSnapshot's link_* vectors (entry
// `shard * followers + follower`). link_lag sets the count; a shorter vector exports none
// of its entries past its end, and a family with no series is left out unless `always`.
struct LinkSeries {
  const char* name;
  const char* help;
  const char* unit;
  MetricType type;
  const std::vector<uint64_t> replication::MetricsSnapshot::*values;
  bool always;
};
constexpr LinkSeries kLinkSeries[] = {
    {"rdmarepl_follower_shard_lag_records",
     "leader: records of the shard a follower has not acknowledged", "records", MetricType::Gauge,
     &replication::MetricsSnapshot::link_lag, true},
    {"rdmarepl_follower_shard_lag_bytes",
     "leader: bytes of the shard's sealed batches a follower has not acknowledged, over the "
     "retained window",
     "bytes", MetricType::Gauge, &replication::MetricsSnapshot::link_lag_bytes, true},
    {"rdmarepl_follower_shard_batches_sent_total",
     "leader: batch writes posted to a follower on the shard", "batches", MetricType::Counter,
     &replication::MetricsSnapshot::link_batches_sent, false},
    {"rdmarepl_follower_shard_credit_stalls_total",
     "leader: times a batch to a follower on the shard waited for ring space or queue depth",
     "events", MetricType::Counter, &replication::MetricsSnapshot::link_credit_stalls, false},
    {"rdmarepl_follower_shard_reconnects_total",
     "leader: the shard's link to a follower (re)established after the first", "connections",
     MetricType::Counter, &replication::MetricsSnapshot::link_reconnects, false},
    {"rdmarepl_follower_shard_catchup_bytes_total",
     "leader: bytes of log batches and checkpoint chunks sent to a follower on the shard to "
     "catch it up",
     "bytes", MetricType::Counter, &replication::MetricsSnapshot::link_catchup_bytes, false},
};

}  // namespace

void ChannelCollector::add_links(const replication::MetricsSnapshot& m,
                                 std::vector<MetricFamily>& out) const {
  const size_t shards = m.shard_seq.size();
  if (shards == 0 || m.link_lag.size() % shards != 0 || m.link_lag.empty()) return;
  const size_t followers = m.link_lag.size() / shards;
  for (const auto& series : kLinkSeries) {
    auto fam = family(series.name, series.help, series.unit, series.type);
    const auto& values = m.*series.values;
    for (size_t f = 0; f < followers; ++f)
      for (size_t i = 0; i < shards; ++i) {
        const size_t k = i * followers + f;
        if (k >= values.size()) continue;
        auto l = labels();
        l.push_back({"follower", std::to_string(f)});
        l.push_back({"shard", std::to_string(i)});
        fam.metric.push_back(sample(series.type, std::move(l), static_cast<double>(values[k])));
      }
    if (series.always || !fam.metric.empty()) out.push_back(std::move(fam));
  }
}

void ChannelCollector::add_histograms(const replication::MetricsSnapshot& m,
                                      std::vector<MetricFamily>& out) const {
  for (const auto& f : replication::kHistogramFields) {
    auto fam = family(exported_name(f), f.help, f.unit == "nanoseconds" ? "seconds" : f.unit,
                      MetricType::Histogram);
    ClientMetric c;
    c.label = labels();
    c.histogram = to_prometheus(m.*f.member, scale_of(f.unit));
    fam.metric.push_back(std::move(c));
    out.push_back(std::move(fam));
  }
}

void ChannelCollector::add_knobs(const tuning::Knobs& k, std::vector<MetricFamily>& out) const {
  auto one = [&](const char* name, const char* help, const char* unit, double v) {
    auto fam = family(name, help, unit, MetricType::Gauge);
    fam.metric.push_back(gauge(labels(), v));
    out.push_back(std::move(fam));
  };
  one("rdmarepl_knob_batch_bytes", "knob in force: a batch is sent when it reaches this size",
      "bytes", static_cast<double>(k.batch_bytes));
  one("rdmarepl_knob_flush_delay_seconds",
      "knob in force: a batch is sent when its oldest record is this old", "seconds",
      static_cast<double>(k.flush_delay_us) * 1e-6);
  one("rdmarepl_knob_shards", "knob in force: carriers per follower (and poller threads)", "shards",
      static_cast<double>(k.shards));
  one("rdmarepl_knob_poll_interval_seconds",
      "knob in force: the longest idle wait of a sleeping or blocking poller", "seconds",
      static_cast<double>(k.poll_interval_us) * 1e-6);
  one("rdmarepl_knob_pool_bytes", "knob in force: registered pool size", "bytes",
      static_cast<double>(k.pool_bytes));
  auto mode = family("rdmarepl_knob_poll_mode", "knob in force: the poller's mode (label mode)",
                     "1 for the mode in force", MetricType::Gauge);
  auto l = labels();
  l.push_back({"mode", std::string(to_string(k.poll_mode))});
  mode.metric.push_back(gauge(l, 1.0));
  out.push_back(std::move(mode));
}

}  // namespace rdmarepl::metrics
