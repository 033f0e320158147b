// Rate limiting for log lines that an attacker (or a broken peer) can make a listener repeat:
// one line per key (for example "refused|10.0.0.7") per interval. The first line of a key
// is written at once; those that follow within the interval are held back and counted, and
// the count is reported once the interval has ended, with the next line of that key or by
// flush(). The counters the lines describe are kept elsewhere and stay exact.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rdmarepl/core/clock.h"

namespace rdmarepl {

class RepeatLimiter {
 public:
  static constexpr Duration kDefaultInterval = std::chrono::seconds(1);
  static constexpr size_t kDefaultMaxKeys = 1024;

  explicit RepeatLimiter(Duration interval = kDefaultInterval, size_t max_keys = kDefaultMaxKeys)
      : interval_(interval), max_keys_(max_keys) {}

  // Whether a line of `key` is to be written now. When it is, `held_back` is the number
  // of lines of that key held back since the last one written (0 for most lines).
  // Thread-safe.
  bool admit(std::string_view key, uint64_t& held_back);

  // The keys whose interval ended with lines held back, each with its count, reported
  // once; forgets keys idle for an interval. Thread-safe.
  std::vector<std::pair<std::string, uint64_t>> flush();

  [[nodiscard]] Duration interval() const noexcept { return interval_; }

 private:
  struct Window {
    Clock::time_point start;
    uint64_t held_back = 0;
  };
  Duration interval_;
  size_t max_keys_;
  std::mutex mu_;
  std::unordered_map<std::string, Window> windows_;
  uint64_t overflow_ = 0;  // lines held back because max_keys_ keys were in use
};

// " (N more like it in the last M ms)" for a count of held-back lines, "" for 0.
std::string held_back_note(uint64_t held_back, Duration interval);

}  // namespace rdmarepl
