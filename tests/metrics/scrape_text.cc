#include "scrape_text.h"

#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>

namespace rdmarepl::testing {

Samples parse_scrape(const std::string& text) {
  Samples out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    INFO(line);
    CHECK(space != std::string::npos);
    if (space == std::string::npos) continue;
    const std::string value = line.substr(space + 1);
    double v = value == "+Inf" ? HUGE_VAL : std::strtod(value.c_str(), nullptr);
    out[line.substr(0, space)] = v;
  }
  return out;
}

Samples scrape(const prometheus::Collectable& c, std::string* text) {
  prometheus::TextSerializer ser;
  std::string t = ser.Serialize(c.Collect());
  if (text != nullptr) *text = t;
  return parse_scrape(t);
}

}  // namespace rdmarepl::testing
