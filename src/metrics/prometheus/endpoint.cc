#include "rdmarepl/metrics/prometheus/endpoint.h"

#include <prometheus/exposer.h>

#include <exception>

namespace rdmarepl::metrics {

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& bind_address) {
  std::unique_ptr<MetricsEndpoint> ep(new MetricsEndpoint());
  try {
    // One serving thread: a scrape a second needs no more.
    ep->exposer_ = std::make_unique<prometheus::Exposer>(bind_address, 1);
  } catch (const std::exception& e) {
    return Error(Errc::io_error, "cannot serve metrics on '" + bind_address + "' (" + e.what() +
                                     "); choose a free port, or host:port with a local address");
  }
  return ep;
}

MetricsEndpoint::~MetricsEndpoint() {
  exposer_.reset();
}

void MetricsEndpoint::add(std::shared_ptr<prometheus::Collectable> c) {
  exposer_->RegisterCollectable(c);
  collectables_.push_back(std::move(c));
}

uint16_t MetricsEndpoint::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : static_cast<uint16_t>(ports.front());
}

}  // namespace rdmarepl::metrics
