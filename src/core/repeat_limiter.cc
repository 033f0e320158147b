#include "core/repeat_limiter.h"

#include <fmt/format.h>

namespace rdmarepl {

bool RepeatLimiter::admit(std::string_view key, uint64_t& held_back) {
  held_back = 0;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  auto it = windows_.find(std::string(key));
  if (it == windows_.end()) {
    if (windows_.size() >= max_keys_) {
      // Too many distinct keys at once (an attack from many addresses): their lines are
      // counted together and reported by flush().
      ++overflow_;
      return false;
    }
    windows_.emplace(std::string(key), Window{now, 0});
    return true;
  }
  Window& w = it->second;
  if (now - w.start < interval_) {
    ++w.held_back;
    return false;
  }
  held_back = w.held_back;
  w = Window{now, 0};
  return true;
}

std::vector<std::pair<std::string, uint64_t>> RepeatLimiter::flush() {
  std::vector<std::pair<std::string, uint64_t>> out;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  for (auto it = windows_.begin(); it != windows_.end();) {
    Window& w = it->second;
    if (now - w.start < interval_) {
      ++it;
      continue;
    }
    if (w.held_back != 0) {
      out.emplace_back(it->first, w.held_back);
      w = Window{now, 0};  // what follows within an interval is held back again
      ++it;
    } else {
      it = windows_.erase(it);
    }
  }
  if (overflow_ != 0) {
    out.emplace_back("", overflow_);
    overflow_ = 0;
  }
  return out;
}

std::string held_back_note(uint64_t held_back, Duration interval) {
  if (held_back == 0) return {};
  return fmt::format(" ({} more like it in the last {} ms)", held_back,
                     std::chrono::duration_cast<std::chrono::milliseconds>(interval).count());
}

}  // namespace rdmarepl
