// A minimal HTTP/1.0 GET against 127.0.0.1 for tests (Prometheus's API, /metrics).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmarepl::testing {

struct HttpResponse {
  int status = 0;  // 0: no connection
  std::string body;
};

HttpResponse http_get(uint16_t port, const std::string& path);
// Percent-encodes a query parameter value.
std::string url_encode(std::string_view s);
// A TCP port on 127.0.0.1 that was free a moment ago, with `count` consecutive ones free.
uint16_t free_port_range(unsigned count);

}  // namespace rdmarepl::testing
