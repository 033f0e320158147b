#include "rdmarepl/metrics/prometheus/read_server_collector.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "scrape_text.h"

using namespace rdmarepl;

namespace {

metrics::ReadServerCollector collector(const reads::ReadServerStats& s) {
  return metrics::ReadServerCollector([s] { return s; }, "f1");
}

}  // namespace

TEST_CASE("the read server collector exports every counter with its node") {
  reads::ReadServerStats s;
  s.connections = 3;
  s.requests = 1200;
  s.keys = 5000;
  s.bad_requests = 2;
  s.behind = 7;
  s.handshake_timeouts = 4;
  s.handshakes_refused = 9;
  std::string text;
  auto samples = testing::scrape(collector(s), &text);
  INFO(text);
  CHECK(samples[R"(rdmarepl_read_connections{node="f1"})"] == 3);
  CHECK(samples[R"(rdmarepl_read_requests_total{node="f1"})"] == 1200);
  CHECK(samples[R"(rdmarepl_read_keys_total{node="f1"})"] == 5000);
  CHECK(samples[R"(rdmarepl_read_bad_requests_total{node="f1"})"] == 2);
  CHECK(samples[R"(rdmarepl_read_behind_total{node="f1"})"] == 7);
  CHECK(samples[R"(rdmarepl_read_handshake_timeouts_total{node="f1"})"] == 4);
  CHECK(samples[R"(rdmarepl_read_handshakes_refused_total{node="f1"})"] == 9);
  CHECK(text.find("# TYPE rdmarepl_read_requests_total counter") != std::string::npos);
  CHECK(text.find("# TYPE rdmarepl_read_connections gauge") != std::string::npos);
}

TEST_CASE("docs/operations.md names every metric the read server collector exports") {
  std::ifstream in(RDMAREPL_DOCS_DIR "/operations.md");
  REQUIRE(in);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& family : collector({}).Collect()) {
    INFO(family.name);
    CHECK(doc.find("`" + family.name + "`") != std::string::npos);
  }
}
