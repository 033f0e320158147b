#include "rdmarepl/metrics/prometheus/read_server_collector.h"

namespace rdmarepl::metrics {

std::vector<prometheus::MetricFamily> ReadServerCollector::Collect() const {
  struct Field {
    uint64_t reads::ReadServerStats::*value;
    const char* name;
    prometheus::MetricType type;
    const char* help;
  };
  using prometheus::MetricType;
  static constexpr Field kFields[] = {
      {&reads::ReadServerStats::connections, "rdmarepl_read_connections", MetricType::Gauge,
       "read clients connected to this replica's read server"},
      {&reads::ReadServerStats::requests, "rdmarepl_read_requests_total", MetricType::Counter,
       "read requests answered (one request holds one or more keys)"},
      {&reads::ReadServerStats::keys, "rdmarepl_read_keys_total", MetricType::Counter,
       "keys looked up in the store for read requests"},
      {&reads::ReadServerStats::bad_requests, "rdmarepl_read_bad_requests_total",
       MetricType::Counter, "malformed read requests (answered with an error or dropped)"},
      {&reads::ReadServerStats::behind, "rdmarepl_read_behind_total", MetricType::Counter,
       "at_least reads answered \"behind\": the replica had not applied the ticket in time"},
      {&reads::ReadServerStats::handshake_timeouts, "rdmarepl_read_handshake_timeouts_total",
       MetricType::Counter, "read clients whose handshake did not end within connect_timeout"},
      {&reads::ReadServerStats::handshakes_refused, "rdmarepl_read_handshakes_refused_total",
       MetricType::Counter,
       "read clients closed at once (admission limits) or whose handshake failed"},
  };
  const reads::ReadServerStats s = stats_();
  std::vector<prometheus::MetricFamily> out;
  out.reserve(std::size(kFields));
  for (const Field& f : kFields) {
    prometheus::MetricFamily fam;
    fam.name = f.name;
    fam.help = f.help;
    fam.type = f.type;
    prometheus::ClientMetric m;
    m.label = {{"node", node_}};
    const auto v = static_cast<double>(s.*f.value);
    if (f.type == MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    fam.metric.push_back(std::move(m));
    out.push_back(std::move(fam));
  }
  return out;
}

}  // namespace rdmarepl::metrics
