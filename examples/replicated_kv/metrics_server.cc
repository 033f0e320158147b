#include "metrics_server.h"

#include <string>

#if RDMAREPL_KV_PROMETHEUS
#include "rdmarepl/metrics/prometheus/channel_collector.h"
#include "rdmarepl/metrics/prometheus/endpoint.h"
#include "rdmarepl/metrics/prometheus/process_collector.h"
#include "rdmarepl/metrics/prometheus/read_server_collector.h"
#include "rdmarepl/metrics/prometheus/rnic_collector.h"
#endif

namespace rdmarepl::kvdemo {

bool MetricsServer::available() noexcept {
  return RDMAREPL_KV_PROMETHEUS != 0;
}

Result<MetricsServer> MetricsServer::start(const replication::ReplicationChannel<KvStore>& channel,
                                           uint16_t port, const ReadServer* reads) {
  MetricsServer server;
  if (port == 0) return server;
#if RDMAREPL_KV_PROMETHEUS
  auto ep = metrics::MetricsEndpoint::start("127.0.0.1:" + std::to_string(port));
  if (!ep) return std::move(ep).error();
  (*ep)->add(metrics::ChannelCollector::of(channel));
  if (reads != nullptr)
    (*ep)->add(metrics::ReadServerCollector::of(*reads, channel.options().node_id));
  (*ep)->add(std::make_shared<metrics::ProcessCollector>(channel.options().node_id));
  (*ep)->add(std::make_shared<metrics::RnicCollector>());
  server.endpoint_ = std::shared_ptr<metrics::MetricsEndpoint>(std::move(*ep));
  return server;
#else
  (void)channel;
  (void)reads;
  return Error(Errc::unsupported,
               "--metrics-port needs rdmarepl built with the Prometheus exposition: install "
               "prometheus-cpp-dev (scripts/setup does) and configure again");
#endif
}

}  // namespace rdmarepl::kvdemo
