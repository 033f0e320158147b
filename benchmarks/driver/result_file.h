// A result written as JSON (--json FILE), with the machine it was measured on.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "machine.h"

namespace rdmarepl::bench {

inline nlohmann::ordered_json machine_json(const MachineInfo& m) {
  return {{"nproc", m.cores}, {"cpu_model", m.cpu_model}, {"kernel", m.kernel}};
}

// Writes `j`, indented, to `path`; false (the reason on stderr) when it cannot.
inline bool write_result(const std::string& path, const nlohmann::ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (out) return true;
  fmt::print(stderr, "rdmarepl-bench: cannot write {}\n", path);
  return false;
}

}  // namespace rdmarepl::bench
