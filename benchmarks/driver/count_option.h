// A CLI11 transform for counts and sizes: digits with an optional k/m/g (x1000) or
// KiB/MiB suffix ("20000", "100k", "1m", "256KiB"), rewritten to plain digits.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <string>

namespace rdmarepl::bench {

// "" when `text` is a count (and then rewritten to its digits), else why not.
inline std::string expand_count(std::string& text) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string rest(p, static_cast<size_t>(text.data() + text.size() - p));
  uint64_t mult = 1;
  if (rest == "k" || rest == "K") {
    mult = 1000;
  } else if (rest == "m" || rest == "M") {
    mult = 1000 * 1000;
  } else if (rest == "g" || rest == "G") {
    mult = 1000 * 1000 * 1000;
  } else if (rest == "KiB" || rest == "ki") {
    mult = 1024;
  } else if (rest == "MiB" || rest == "mi") {
    mult = 1024 * 1024;
  } else if (!rest.empty()) {
    ec = std::errc::invalid_argument;
  }
  if (ec != std::errc() || text.empty() || p == text.data())
    return "'" + text +
           "' is not a count; use digits with an optional k/m/g (x1000) or KiB/MiB suffix, "
           "e.g. 20000 or 1m";
  text = std::to_string(v * mult);
  return "";
}

inline CLI::Validator count_suffix() {
  return CLI::Validator([](std::string& text) { return expand_count(text); }, "COUNT", "count");
}

}  // namespace rdmarepl::bench
