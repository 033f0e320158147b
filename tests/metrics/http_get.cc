#include "http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace rdmarepl::testing {

namespace {

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

bool port_free(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  auto a = loopback(port);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

HttpResponse http_get(uint16_t port, const std::string& path) {
  HttpResponse r;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return r;
  auto a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return r;
  }
  std::string resp;
  char buf[16384];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  // "HTTP/1.0 200 OK\r\n..."
  auto sp = resp.find(' ');
  if (sp != std::string::npos) r.status = std::atoi(resp.c_str() + sp + 1);
  auto body = resp.find("\r\n\r\n");
  if (body != std::string::npos) r.body = resp.substr(body + 4);
  return r;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

uint16_t free_port_range(unsigned count) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    // Below the Linux ephemeral range (32768..), where outgoing connections take ports.
    auto base = static_cast<uint16_t>(20000 + (std::rand() % 10000));
    bool all = true;
    for (unsigned i = 0; i < count && all; ++i) all = port_free(static_cast<uint16_t>(base + i));
    if (all) return base;
  }
  return 0;
}

}  // namespace rdmarepl::testing
