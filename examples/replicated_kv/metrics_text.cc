#include "metrics_text.h"

#include <fmt/format.h>

#include "control_socket.h"
#include "flags.h"
#include "json_writer.h"

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
  JsonWriter j;
  j.begin_object();
  for (const auto& f : kMetricFields) j.field(f.name, m.*f.member);
  j.end_object();
  return j.str();
}

}  // namespace rdmarepl::kvdemo
