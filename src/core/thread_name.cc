#include "core/thread_name.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>

namespace rdmarepl::core {

void name_this_thread(std::string_view name) noexcept {
  char buf[16];  // the kernel's TASK_COMM_LEN, terminator included
  const size_t n = std::min(name.size(), sizeof(buf) - 1);
  std::copy_n(name.data(), n, buf);
  buf[n] = '\0';
  pthread_setname_np(pthread_self(), buf);
}

void name_this_thread(replication::Role role, std::string_view what, int index) noexcept {
  const char r = role == replication::Role::leader ? 'L' : 'F';
  char buf[32];
  auto end = index < 0 ? fmt::format_to_n(buf, sizeof(buf) - 1, "rr{}-{}", r, what)
                       : fmt::format_to_n(buf, sizeof(buf) - 1, "rr{}-{}{}", r, what, index);
  name_this_thread(std::string_view(buf, end.out - buf));
}

}  // namespace rdmarepl::core
