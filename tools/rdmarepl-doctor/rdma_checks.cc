#include "rdma_checks.h"

#include <fmt/format.h>

#include <optional>

namespace rdmarepl::doctor {
namespace {

constexpr const char* kNoDevice = "no RDMA device (/sys/class/infiniband is missing or empty)";
constexpr const char* kNoDeviceFix =
    "load the NIC's RDMA driver (mlx5_ib, ...), or for Soft-RoCE `modprobe rdma_rxe && rdma "
    "link add rxe0 type rxe netdev <eth>`; without RDMA run the channel with transport=tcp";

Check no_device(std::string name) {
  return {Verdict::fail, std::move(name), kNoDevice, kNoDeviceFix};
}

std::string port_name(const DeviceFacts& d, const PortFacts& p) {
  return fmt::format("{}/{}", d.name, p.port);
}

Check unqueried(std::string name, const DeviceFacts& d) {
  return {Verdict::fail, std::move(name), d.verbs_error,
          "install rdma-core's user-space providers (ibverbs-providers) and check `ibv_devinfo`"};
}

bool ipv4_mapped(const std::string& gid) {
  return gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0;
}

}  // namespace

std::vector<Check> check_devices(const std::vector<DeviceFacts>& devices) {
  if (devices.empty()) return {no_device("rdma devices")};
  std::string names;
  for (const auto& d : devices)
    names += fmt::format("{}{} ({} port{})", names.empty() ? "" : ", ", d.name, d.ports.size(),
                         d.ports.size() == 1 ? "" : "s");
  return {{Verdict::pass, "rdma devices", names, ""}};
}

std::vector<Check> check_ports(const std::vector<DeviceFacts>& devices) {
  if (devices.empty()) return {no_device("port state")};
  std::vector<Check> out;
  for (const auto& d : devices) {
    for (const auto& p : d.ports) {
      Check c{Verdict::pass, "port " + port_name(d, p),
              fmt::format("{} ({}, {})", p.state, p.phys_state, p.link_layer), ""};
      if (p.state != "ACTIVE") {
        c.verdict = Verdict::fail;
        c.advice = p.link_layer == "InfiniBand" && p.state == "INIT"
                       ? "no subnet manager has configured the port: start opensm on the fabric"
                       : "bring the link up (`ip link set <netdev> up`, check cable and switch "
                         "port); the channel fails its connections while the port is down";
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Check> check_opcodes(const std::vector<DeviceFacts>& devices) {
  if (devices.empty()) return {no_device("write-with-imm and read")};
  std::vector<Check> out;
  for (const auto& d : devices) {
    std::string name = "write-with-imm and read " + d.name;
    if (!d.queried) {
      out.push_back(unqueried(name, d));
    } else if (d.iwarp) {
      out.push_back({Verdict::fail, name, "iWARP has no RDMA write-with-immediate",
                     "use an InfiniBand or RoCE device, or transport=tcp"});
    } else if (d.max_qp_rd_atom == 0) {
      out.push_back({Verdict::fail, name, "RDMA read is not supported (max_qp_rd_atom 0)",
                     "use a device that supports RDMA read"});
    } else {
      out.push_back({Verdict::pass, name,
                     fmt::format("RC write-with-immediate supported; RDMA read supported "
                                 "(max_qp_rd_atom {})",
                                 d.max_qp_rd_atom),
                     ""});
    }
  }
  return out;
}

std::vector<Check> check_gids(const std::vector<DeviceFacts>& devices) {
  if (devices.empty()) return {no_device("gid")};
  std::vector<Check> out;
  for (const auto& d : devices) {
    for (const auto& p : d.ports) {
      std::string name = "gid " + port_name(d, p);
      if (p.link_layer == "InfiniBand") {
        out.push_back(
            {Verdict::pass, name, "InfiniBand: addressed by LID, no RoCE GID needed", ""});
        continue;
      }
      const GidEntry* best = nullptr;
      for (const auto& g : p.gids)
        if (g.type == "RoCE v2" &&
            (best == nullptr || (!ipv4_mapped(best->gid) && ipv4_mapped(g.gid))))
          best = &g;
      if (best == nullptr) {
        out.push_back({Verdict::fail, name,
                       fmt::format("no RoCE v2 entry in the GID table ({} entries)", p.gids.size()),
                       "give the port's netdev an IP address (`ip addr add <ip>/<len> dev "
                       "<netdev>`); RoCE v2 GIDs are derived from it"});
        continue;
      }
      out.push_back({Verdict::pass, name,
                     fmt::format("RoCE v2 entry at index {} ({} on {}){}", best->index, best->gid,
                                 best->ndev.empty() ? "?" : best->ndev,
                                 ipv4_mapped(best->gid) ? "; the channel uses this index"
                                                        : "; not IPv4-mapped: give the netdev an "
                                                          "IPv4 address for the channel's choice"),
                     ""});
    }
  }
  return out;
}

std::vector<Check> check_mtus(const std::vector<DeviceFacts>& devices, const SysRoot& root) {
  if (devices.empty()) return {no_device("mtu")};
  std::vector<Check> out;
  for (const auto& d : devices) {
    for (const auto& p : d.ports) {
      std::string name = "mtu " + port_name(d, p);
      if (p.active_mtu == 0) {
        out.push_back(d.queried ? Check{Verdict::fail, name, "ibv_query_port did not answer",
                                        "check `ibv_devinfo -v`"}
                                : unqueried(name, d));
        continue;
      }
      if (p.link_layer == "InfiniBand") {
        Check c{Verdict::pass, name, fmt::format("active MTU {} on InfiniBand", p.active_mtu), ""};
        if (p.active_mtu < 4096) {
          c.verdict = Verdict::warn;
          c.advice =
              "set the fabric MTU to 4096 in the subnet manager (opensm: mtu 4096 in the "
              "partition configuration)";
        }
        out.push_back(std::move(c));
        continue;
      }
      std::string ndev;
      for (const auto& g : p.gids)
        if (!g.ndev.empty()) ndev = g.ndev;
      auto text = ndev.empty() ? std::nullopt : root.read("/sys/class/net/" + ndev + "/mtu");
      Check c{Verdict::pass, name,
              fmt::format("active MTU {}, netdev {} MTU {}", p.active_mtu,
                          ndev.empty() ? "?" : ndev, text.value_or("unknown")),
              ""};
      int netdev_mtu = 0;
      try {
        netdev_mtu = text ? std::stoi(*text) : 0;
      } catch (...) {
      }
      if (netdev_mtu < 9000 || p.active_mtu < 4096) {
        c.verdict = Verdict::warn;
        c.advice = fmt::format(
            "enable jumbo frames: `ip link set {} mtu 9000` (and on the "
            "switch ports); the RoCE MTU then becomes 4096",
            ndev.empty() ? "<netdev>" : ndev);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Check> check_limits(const std::vector<DeviceFacts>& devices, const ChannelNeeds& n) {
  if (devices.empty()) return {no_device("device limits")};
  std::vector<Check> out;
  for (const auto& d : devices) {
    if (!d.queried) {
      out.push_back(unqueried("device limits " + d.name, d));
      continue;
    }
    auto limit = [&](std::string what, uint64_t have, uint64_t need, std::string fix) {
      bool ok = have >= need;
      out.push_back({ok ? Verdict::pass : Verdict::fail, what + " " + d.name,
                     fmt::format("{} on the device, the channel needs {}", have, need),
                     ok ? "" : std::move(fix)});
    };
    limit("max_mr_size", d.max_mr_size, n.largest_region,
          "lower retain_bytes / ring_bytes / max_value_bytes / zero_copy_pool_bytes");
    limit("max_qp", d.max_qp, n.queue_pairs, "use fewer shards or followers per node");
    limit("max_qp_wr", d.max_qp_wr, n.queue_depth, "lower queue_depth");
    if (!d.inline_error.empty()) {
      out.push_back({Verdict::fail, "max_inline_data " + d.name, d.inline_error,
                     "check the device with `ibv_devinfo -v`; its QPs cannot carry inline data"});
    } else {
      limit("max_inline_data", d.max_inline_data, n.max_inline_data,
            "the device sends fewer bytes inline than the transport asks; small writes are DMA'd");
      if (out.back().verdict == Verdict::fail) out.back().verdict = Verdict::warn;
    }
  }
  return out;
}

std::vector<Check> rdma_checks(const std::vector<DeviceFacts>& devices, const SysRoot& root,
                               const ChannelNeeds& needs) {
  std::vector<Check> all;
  for (auto part : {check_devices(devices), check_ports(devices), check_opcodes(devices),
                    check_gids(devices), check_mtus(devices, root), check_limits(devices, needs)})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace rdmarepl::doctor
