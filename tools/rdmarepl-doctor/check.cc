#include "check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace rdmarepl::doctor {

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::pass:
      return "PASS";
    case Verdict::warn:
      return "WARN";
    case Verdict::fail:
      return "FAIL";
  }
  return "FAIL";
}

std::string format_line(const Check& c) {
  if (c.advice.empty()) return fmt::format("{} {}: {}", to_string(c.verdict), c.name, c.detail);
  return fmt::format("{} {}: {}; fix: {}", to_string(c.verdict), c.name, c.detail, c.advice);
}

bool any_failed(const std::vector<Check>& checks) noexcept {
  return std::any_of(checks.begin(), checks.end(),
                     [](const Check& c) { return c.verdict == Verdict::fail; });
}

std::string human_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  uint64_t v = bytes;
  while (u + 1 < std::size(kUnits) && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  if (u == 0 && bytes >= 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  return fmt::format("{} {}", v, kUnits[u]);
}

}  // namespace rdmarepl::doctor
