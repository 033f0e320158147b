// A reader of the Prometheus text format for tests: every sample line as
// `name{label="v",...}` -> value, with the labels in the order written.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <prometheus/collectable.h>

namespace rdmarepl::testing {

using Samples = std::map<std::string, double>;

// Parses exposition text; a line that is neither a comment nor `series value` fails a
// CHECK and is skipped.
Samples parse_scrape(const std::string& text);
// Serialises what `c` collects, as an exposer would, and parses it back.
Samples scrape(const prometheus::Collectable& c, std::string* text = nullptr);

}  // namespace rdmarepl::testing
