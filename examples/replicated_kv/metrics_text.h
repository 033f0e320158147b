// A channel's metrics as text, from the field table (replication::kMetricFields): the
// "name=value" tokens of the control lines, and a JSON object for result files.
#pragma once

#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel_metrics.h"

namespace rdmarepl::kvdemo {

// "records_replicated=12 bytes_replicated=3456 ...": every scalar metric, space-separated.
std::string metrics_to_wire(const replication::MetricsSnapshot& m);

// Reads the scalar metrics back from a control line that carries metrics_to_wire() tokens
// (other tokens are ignored). Fails naming the first metric that is missing or not a count.
Result<replication::MetricsSnapshot> metrics_from_wire(std::string_view line);

// {"records_replicated": 12, ...}: every scalar metric, as valid JSON.
std::string metrics_to_json(const replication::MetricsSnapshot& m);

}  // namespace rdmarepl::kvdemo
