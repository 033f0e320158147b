#include "machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

namespace rdmarepl::bench {

MachineInfo machine_info() {
  MachineInfo m;
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cores = n > 0 ? static_cast<unsigned>(n) : 0;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  utsname u{};
  if (::uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  return m;
}

}  // namespace rdmarepl::bench
