// A CLI11 transform for counts and sizes: digits with an optional k/m/g (x1000) or
// KiB/MiB suffix ("20000", "100k", "1m", "256KiB"), rewritten to plain digits.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "flags.h"

namespace rdmarepl::bench {

// "" when `text` is a count (and then rewritten to its digits), else why not. The syntax is
// the demo's (kvdemo::parse_count), so that both programs take the same counts.
inline std::string expand_count(std::string& text) {
  auto v = kvdemo::parse_count(text, "count");
  if (!v)
    return "'" + text +
           "' is not a count; use digits with an optional k/m/g (x1000) or KiB/MiB suffix, "
           "e.g. 20000 or 1m";
  text = std::to_string(*v);
  return "";
}

inline CLI::Validator count_suffix() {
  return CLI::Validator([](std::string& text) { return expand_count(text); }, "COUNT", "count");
}

}  // namespace rdmarepl::bench
