// A timed burst of writes on a leader (the "burst" control command of failover_member.h):
// writes first..first+count-1 (failover_key/value) back to back, then waits for the last
// one, which commits after all the others (one shard commits in seq order).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "control_socket.h"
#include "rdmarepl/core/clock.h"

namespace rdmarepl::kvdemo {

// `put(i)` issues write i and returns its ticket or an Error; `wait(ticket)` flushes and
// waits for it. Answers "burst count=K ns=T" (K: writes issued and committed; T: from the
// first put to the last commit), with message=... when K < count.
template <class Put, class Wait>
std::string timed_burst(uint64_t first, uint64_t count, Put&& put, Wait&& wait) {
  const uint64_t t0 = mono_ns();
  uint64_t issued = 0;
  std::string why;
  std::optional<std::remove_cvref_t<decltype(*put(first))>> last;
  for (; issued < count; ++issued) {
    auto t = put(first + issued);
    if (!t) {
      why = t.error().message();
      break;
    }
    last = *t;
  }
  if (last) {
    if (auto st = wait(*last); !st) {
      why = st.error().message();
      issued = 0;
    }
  }
  std::string line = fmt::format("burst count={} ns={}", issued, mono_ns() - t0);
  if (issued < count) line += " message=" + one_line(why);
  return line;
}

}  // namespace rdmarepl::kvdemo
