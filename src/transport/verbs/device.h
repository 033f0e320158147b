// Opening an RDMA device: selection by name or by the first active port, the port and GID
// the connections use, and a side-effect-free probe() that says whether verbs can be used
// here (transport=auto falls back to TCP when it cannot, logging probe().reason).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "transport/verbs/handles.h"

namespace rdmarepl::transport::verbs {

struct DeviceOptions {
  std::string name;    // e.g. "mlx5_0", "rxe0"; empty: the first device with an active port
  uint8_t port = 0;    // 0: the first active port of the device
  int gid_index = -1;  // -1: RoCE uses the IPv4-mapped (::ffff:a.b.c.d) entry; IB uses LIDs
};

// Whether a usable device exists, without keeping anything open.
struct ProbeReport {
  bool usable = false;
  std::string device;  // the device that would be used
  uint8_t port = 0;
  std::string reason;             // why not (empty when usable)
  std::vector<std::string> seen;  // every device name found
};
ProbeReport probe(const DeviceOptions& options = {});

// One opened device: its context and one protection domain (every MR and QP of a transport
// lives in this PD). Members are declared so that the PD is destroyed before the context.
class Device {
 public:
  // Errc::no_device names what was looked for and what exists; Errc::io_error otherwise.
  static Result<std::shared_ptr<Device>> open(const DeviceOptions& options);

  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() = default;

  [[nodiscard]] ibv_context* context() const noexcept { return context_.get(); }
  [[nodiscard]] ibv_pd* pd() const noexcept { return pd_.get(); }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] uint8_t port() const noexcept { return port_; }
  [[nodiscard]] const ibv_device_attr& attr() const noexcept { return attr_; }
  // Port attributes as of open(); use query_port() for the live state.
  [[nodiscard]] const ibv_port_attr& port_attr() const noexcept { return port_attr_; }
  [[nodiscard]] bool is_roce() const noexcept {
    return port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;
  }
  [[nodiscard]] int gid_index() const noexcept { return gid_index_; }
  [[nodiscard]] const ibv_gid& gid() const noexcept { return gid_; }
  Result<ibv_port_attr> query_port() const;

 private:
  Device() = default;
  ContextHandle context_;
  PdHandle pd_;
  std::string name_;
  uint8_t port_ = 1;
  ibv_device_attr attr_{};
  ibv_port_attr port_attr_{};
  int gid_index_ = 0;
  ibv_gid gid_{};
};

// Index of the first GID of the form ::ffff:a.b.c.d (RoCE v2 over IPv4), or -1.
int find_ipv4_mapped_gid(ibv_context* context, uint8_t port, int table_len) noexcept;
// "fe80:0000:...": the GID in the notation of /sys/class/infiniband/*/ports/*/gids/*.
std::string gid_to_string(const ibv_gid& gid);
std::string_view to_string(ibv_mtu mtu) noexcept;  // "1024"
std::string_view to_string(ibv_port_state state) noexcept;

}  // namespace rdmarepl::transport::verbs
