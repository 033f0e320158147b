// The results of one YCSB run as JSON and as YCSB-style lines.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "workload.h"
#include "ycsb_run.h"

namespace rdmarepl::ycsb {

using Json = nlohmann::ordered_json;

Json report(const RunOptions& o, const RunResult& r, const std::string& transport);
void print(const Json& j);

}  // namespace rdmarepl::ycsb
