#include "rdmarepl/metrics/prometheus/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "rdmarepl/metrics/prometheus/channel_collector.h"
#include "rdmarepl/metrics/prometheus/process_collector.h"
#include "scrape_text.h"

using namespace rdmarepl;

namespace {

// GET /metrics from 127.0.0.1:port; the whole response body.
std::string http_get_metrics(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  auto body = resp.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : resp.substr(body + 4);
}

}  // namespace

TEST_CASE("the endpoint serves its collectables over HTTP") {
  auto ep = metrics::MetricsEndpoint::start("127.0.0.1:0");
  REQUIRE(ep.ok());
  REQUIRE((*ep)->port() != 0);
  replication::MetricsSnapshot m;
  m.records_applied = 1234;
  metrics::ChannelSource s;
  s.metrics = [&m] { return m; };
  s.role = "follower";
  s.node = "f1";
  (*ep)->add(std::make_shared<metrics::ChannelCollector>(s));
  (*ep)->add(std::make_shared<metrics::ProcessCollector>("f1"));

  auto samples = testing::parse_scrape(http_get_metrics((*ep)->port()));
  CHECK(samples[R"(rdmarepl_records_applied_total{role="follower",node="f1"})"] == 1234);
  CHECK(samples[R"(rdmarepl_process_resident_memory_bytes{node="f1"})"] > 0);
  m.records_applied = 1300;  // read on every scrape
  samples = testing::parse_scrape(http_get_metrics((*ep)->port()));
  CHECK(samples[R"(rdmarepl_records_applied_total{role="follower",node="f1"})"] == 1300);
}

TEST_CASE("an endpoint on a port in use fails saying what to do") {
  auto first = metrics::MetricsEndpoint::start("127.0.0.1:0");
  REQUIRE(first.ok());
  auto second = metrics::MetricsEndpoint::start("127.0.0.1:" + std::to_string((*first)->port()));
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.error().message(), Catch::Contains("choose a free port"));
}
