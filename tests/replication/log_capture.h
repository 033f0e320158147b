// Captures the library's log lines for tests that check what the channel reports.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/log.h"

namespace rdmarepl::test {

// While alive, every log line (any level) is kept instead of printed.
class LogCapture {
 public:
  LogCapture() {
    log::set_sink([this](log::Level, std::string_view m) {
      std::lock_guard lock(mu_);
      lines_.emplace_back(m);
    });
  }
  ~LogCapture() { log::set_sink(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // True when one line contains both `a` and `b`.
  [[nodiscard]] bool contains(std::string_view a, std::string_view b = {}) const {
    std::lock_guard lock(mu_);
    for (const auto& l : lines_)
      if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
    return false;
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  void clear() {
    std::lock_guard lock(mu_);
    lines_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace rdmarepl::test
