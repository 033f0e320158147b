// The RDMA devices as sysfs shows them (/sys/class/infiniband/<dev>/ports/<n>/...).
#include <fmt/format.h>

#include <algorithm>

#include "rdma_facts.h"

namespace rdmarepl::doctor {
namespace {

// "4: ACTIVE" -> "ACTIVE"
std::string after_colon(const std::string& s) {
  auto p = s.find(':');
  if (p == std::string::npos) return s;
  auto v = s.find_first_not_of(' ', p + 1);
  return v == std::string::npos ? std::string() : s.substr(v);
}

bool is_zero_gid(const std::string& gid) {
  return gid.find_first_not_of("0:") == std::string::npos;
}

std::vector<GidEntry> read_gids(const SysRoot& root, const std::string& dir) {
  std::vector<GidEntry> out;
  for (const auto& idx : root.list(dir + "/gids")) {
    auto gid = root.read(dir + "/gids/" + idx);
    if (!gid || is_zero_gid(*gid)) continue;
    GidEntry e;
    try {
      e.index = std::stoi(idx);
    } catch (...) {
      continue;
    }
    e.gid = *gid;
    e.type = root.read(dir + "/gid_attrs/types/" + idx).value_or("");
    e.ndev = root.read(dir + "/gid_attrs/ndevs/" + idx).value_or("");
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return out;
}

}  // namespace

std::vector<DeviceFacts> read_sysfs_devices(const SysRoot& root) {
  std::vector<DeviceFacts> devices;
  for (const auto& name : root.list("/sys/class/infiniband")) {
    DeviceFacts d;
    d.name = name;
    const std::string base = "/sys/class/infiniband/" + name + "/ports";
    for (const auto& p : root.list(base)) {
      PortFacts port;
      try {
        port.port = static_cast<uint32_t>(std::stoul(p));
      } catch (...) {
        continue;
      }
      const std::string dir = base + "/" + p;
      port.state = after_colon(root.read(dir + "/state").value_or("unknown"));
      port.phys_state = after_colon(root.read(dir + "/phys_state").value_or("unknown"));
      port.link_layer = root.read(dir + "/link_layer").value_or("unknown");
      port.gids = read_gids(root, dir);
      d.ports.push_back(std::move(port));
    }
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace rdmarepl::doctor
