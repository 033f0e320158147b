// A recording relay between two sockets, shared by the handshake tests.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace rdmarepl::test {

// Copies bytes from `from` to `to` until EOF, recording them.
inline void relay(int from, int to, std::vector<uint8_t>& record) {
  uint8_t buf[4096];
  for (;;) {
    ssize_t n = ::read(from, buf, sizeof buf);
    if (n <= 0) break;
    record.insert(record.end(), buf, buf + n);
    if (::write(to, buf, static_cast<size_t>(n)) != n) break;
  }
  ::shutdown(to, SHUT_WR);
}

}  // namespace rdmarepl::test
