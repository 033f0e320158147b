// A real Prometheus server for tests: Debian's /usr/bin/prometheus started with a generated
// config (scrape every 100 ms, storage in a scratch directory, a free port) and asked
// through its HTTP API (/api/v1/query, /api/v1/query_range).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rdmarepl::testing {

class PrometheusServer {
 public:
  // The server binary: $PROMETHEUS_BIN, else /usr/bin/prometheus. Empty when absent.
  static std::string binary();

  // Starts the server scraping `targets` ("127.0.0.1:port") every 100 ms. Throws (fails the
  // test) when it does not become ready within 30 s.
  PrometheusServer(const std::string& scratch_dir, const std::vector<std::string>& targets);
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;
  ~PrometheusServer();

  // The API's `data` of an instant query at `time` (unix seconds; 0: now). An error
  // response (e.g. a parse error) is thrown with Prometheus's message.
  [[nodiscard]] nlohmann::json query(const std::string& expr, double time = 0) const;
  [[nodiscard]] nlohmann::json query_range(const std::string& expr, double start, double end,
                                           double step) const;
  // Waits until every target was scraped once (up or down): the server starts its scrape
  // loops some seconds after it is ready. False after `timeout_s`.
  bool wait_scraping(size_t targets, double timeout_s) const;
  // The targets' health as Prometheus sees them ("up" or "down"), by scrape URL.
  [[nodiscard]] nlohmann::json targets() const;
  [[nodiscard]] uint16_t port() const noexcept { return port_; }
  [[nodiscard]] std::string log() const;

 private:
  [[nodiscard]] nlohmann::json api(const std::string& path) const;

  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rdmarepl::testing
