// What machine a result was measured on: cores, CPU model, kernel.
#pragma once

#include <string>

namespace rdmarepl::bench {

struct MachineInfo {
  unsigned cores = 0;
  std::string cpu_model;
  std::string kernel;
};

MachineInfo machine_info();

}  // namespace rdmarepl::bench
