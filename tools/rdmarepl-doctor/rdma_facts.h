// What the doctor knows about the node's RDMA devices: from sysfs (ports, state, link layer,
// GID table: readable on a fake tree) and from libibverbs (device limits, active MTU, the
// inline size a queue pair gets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sysroot.h"

namespace rdmarepl::doctor {

struct GidEntry {
  int index = 0;
  std::string gid;   // "0000:0000:0000:0000:0000:ffff:0a00:020f"
  std::string type;  // "RoCE v2", "RoCE v1" or "IB/RoCE v1"
  std::string ndev;  // the netdev the entry belongs to (RoCE)
};

struct PortFacts {
  uint32_t port = 1;
  std::string state;       // "ACTIVE", "DOWN", "INIT", ...
  std::string phys_state;  // "LinkUp", "Disabled", ...
  std::string link_layer;  // "Ethernet" (RoCE) or "InfiniBand"
  std::vector<GidEntry> gids;
  uint32_t active_mtu = 0;  // bytes, from ibv_query_port; 0 when unknown
};

struct DeviceFacts {
  std::string name;
  std::vector<PortFacts> ports;
  // From ibv_query_device and a test queue pair; `verbs_error` says why they are missing.
  bool queried = false;
  std::string verbs_error;
  bool iwarp = false;
  uint64_t max_mr_size = 0;
  uint32_t max_qp = 0;
  uint32_t max_qp_wr = 0;
  uint32_t max_qp_rd_atom = 0;
  uint32_t max_inline_data = 0;  // granted to an RC QP that asked for the channel's amount
  std::string inline_error;      // why that QP could not be created
};

// The devices under /sys/class/infiniband with their ports and GID tables.
std::vector<DeviceFacts> read_sysfs_devices(const SysRoot& root);

// Fills the libibverbs facts of each device (queue pairs asking for `want_inline` inline
// bytes). Without the verbs transport in the build, sets verbs_error to say so.
void query_verbs(std::vector<DeviceFacts>& devices, uint32_t want_inline);

}  // namespace rdmarepl::doctor
