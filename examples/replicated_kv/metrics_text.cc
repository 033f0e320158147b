#include "metrics_text.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "control_socket.h"
#include "flags.h"

namespace rdmarepl::kvdemo {

using replication::kMetricFields;
using replication::MetricsSnapshot;

std::string metrics_to_wire(const MetricsSnapshot& m) {
  std::string out;
  for (const auto& f : kMetricFields) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", f.name, m.*f.member);
  }
  return out;
}

Result<MetricsSnapshot> metrics_from_wire(std::string_view line) {
  MetricsSnapshot m;
  for (const auto& f : kMetricFields) {
    auto v = parse_count(field(line, f.name), f.name);
    if (!v) return std::move(v).error();
    m.*f.member = *v;
  }
  return m;
}

std::string metrics_to_json(const MetricsSnapshot& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : kMetricFields) j[std::string(f.name)] = m.*f.member;
  return j.dump();
}

}  // namespace rdmarepl::kvdemo
