#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport {

namespace {

// The longest nap when a connection offers no descriptor to wait on.
constexpr auto kNap = std::chrono::microseconds(50);
// Descriptors one connection may offer (verbs: its completion channel and a liveness fd).
constexpr size_t kPerConnection = 2;

}  // namespace

bool wait_any(std::span<Connection* const> conns, std::chrono::milliseconds timeout) {
  // Reused by the thread between calls: an idle server waits here often.
  thread_local std::vector<pollfd> fds;
  thread_local std::vector<std::pair<size_t, size_t>> spans;  // per connection: first, count
  fds.resize(conns.size() * kPerConnection);
  spans.resize(conns.size());
  size_t used = 0;
  bool blind = false;  // a connection without descriptors: nap instead of blocking
  for (size_t i = 0; i < conns.size(); ++i) {
    const int n = conns[i]->readiness({fds.data() + used, kPerConnection});
    if (n < 0) return true;
    if (n == 0) blind = true;
    spans[i] = {used, static_cast<size_t>(n)};
    used += static_cast<size_t>(n);
  }
  if (used == 0 || blind) {
    std::this_thread::sleep_for(std::min<std::chrono::microseconds>(kNap, timeout));
    if (used == 0) return true;
    timeout = std::chrono::milliseconds(0);
  }
  int rc;
  do {
    rc = ::poll(fds.data(), used, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return blind;
  // Also after a timeout: a connection learns that nothing arrived (TCP then skips its
  // next read).
  for (size_t i = 0; i < conns.size(); ++i)
    if (spans[i].second != 0)
      conns[i]->consume_readiness({fds.data() + spans[i].first, spans[i].second});
  return rc > 0 || blind;
}

}  // namespace rdmarepl::transport
