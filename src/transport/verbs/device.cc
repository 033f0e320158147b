#include "transport/verbs/device.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport::verbs {
namespace {

// The device list, freed on every path.
struct DeviceList {
  ibv_device** list = nullptr;
  int count = 0;
  int error = 0;  // errno when ibv_get_device_list returned NULL
  DeviceList() {
    errno = 0;
    list = ibv_get_device_list(&count);
    if (list == nullptr) error = errno != 0 ? errno : ENODEV;
  }
  ~DeviceList() {
    if (list != nullptr) ibv_free_device_list(list);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
};

std::string looked_for(const DeviceOptions& o) {
  std::string what = o.name.empty() ? std::string("any RDMA device with an active port")
                                    : fmt::format("RDMA device '{}'", o.name);
  if (o.port != 0) what += fmt::format(" (port {})", o.port);
  return what;
}

// A candidate device and port, chosen without keeping anything open when `keep` is null.
struct Choice {
  ibv_device* device = nullptr;
  uint8_t port = 0;
};

Result<Choice> choose(const DeviceList& devices, const DeviceOptions& options,
                      std::vector<std::string>* seen) {
  if (devices.list == nullptr) {
    return Error(Errc::no_device,
                 fmt::format("no RDMA support: looked for {}, but ibv_get_device_list failed: {} "
                             "(errno {}); {}",
                             looked_for(options), std::strerror(devices.error), devices.error,
                             errno_advice(devices.error).empty()
                                 ? "load an RDMA driver or use the TCP transport"
                                 : errno_advice(devices.error)));
  }
  if (devices.count == 0) {
    return Error(Errc::no_device,
                 fmt::format("no RDMA device: looked for {}, but the device list is empty; load "
                             "a driver (e.g. `rdma link add rxe0 type rxe netdev eth0`) or use "
                             "the TCP transport",
                             looked_for(options)));
  }
  std::string states;
  for (int i = 0; i < devices.count; ++i) {
    ibv_device* dev = devices.list[i];
    std::string name = ibv_get_device_name(dev);
    if (seen != nullptr) seen->push_back(name);
    if (!options.name.empty() && name != options.name) continue;
    ibv_context* ctx = ibv_open_device(dev);
    if (ctx == nullptr) {
      states += fmt::format(" {}: cannot open ({});", name, std::strerror(errno));
      continue;
    }
    ContextHandle guard(ctx);
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(ctx, &attr); rc != 0) {
      states += fmt::format(" {}: ibv_query_device failed ({});", name, std::strerror(rc));
      continue;
    }
    for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
      if (options.port != 0 && p != options.port) continue;
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, p, &pa) != 0) continue;
      if (pa.state == IBV_PORT_ACTIVE) return Choice{dev, p};
      states += fmt::format(" {} port {}: {};", name, p, to_string(pa.state));
    }
  }
  std::string names;
  for (int i = 0; i < devices.count; ++i)
    names += fmt::format("{}{}", i == 0 ? "" : ", ", ibv_get_device_name(devices.list[i]));
  return Error(Errc::no_device,
               fmt::format("no usable RDMA device: looked for {}; found [{}];{} bring a link up, "
                           "name another device, or use the TCP transport",
                           looked_for(options), names, states.empty() ? " none matched;" : states));
}

}  // namespace

ProbeReport probe(const DeviceOptions& options) {
  ProbeReport report;
  DeviceList devices;
  auto choice = choose(devices, options, &report.seen);
  if (!choice) {
    report.reason = choice.error().message();
    return report;
  }
  report.usable = true;
  report.device = ibv_get_device_name(choice->device);
  report.port = choice->port;
  return report;
}

Result<std::shared_ptr<Device>> Device::open(const DeviceOptions& options) {
  DeviceList devices;
  auto choice = choose(devices, options, nullptr);
  if (!choice) return choice.error();

  std::shared_ptr<Device> d(new Device());
  d->name_ = ibv_get_device_name(choice->device);
  d->port_ = choice->port;
  d->context_.reset(ibv_open_device(choice->device));
  if (!d->context_) return errno_error(errno, fmt::format("ibv_open_device({})", d->name_));
  if (int rc = ibv_query_device(d->context(), &d->attr_); rc != 0)
    return errno_error(rc, fmt::format("ibv_query_device({})", d->name_));
  if (int rc = ibv_query_port(d->context(), d->port_, &d->port_attr_); rc != 0)
    return errno_error(rc, fmt::format("ibv_query_port({}, {})", d->name_, d->port_));

  if (options.gid_index >= 0) {
    if (options.gid_index >= d->port_attr_.gid_tbl_len) {
      return Error(Errc::invalid_argument,
                   fmt::format("GID index {} is out of range for {} port {} (table has {} "
                               "entries); see /sys/class/infiniband/{}/ports/{}/gids",
                               options.gid_index, d->name_, d->port_, d->port_attr_.gid_tbl_len,
                               d->name_, d->port_));
    }
    d->gid_index_ = options.gid_index;
  } else if (d->is_roce()) {
    d->gid_index_ = find_ipv4_mapped_gid(d->context(), d->port_, d->port_attr_.gid_tbl_len);
    if (d->gid_index_ < 0) {
      return Error(Errc::no_device,
                   fmt::format("{} port {} is RoCE but has no IPv4-mapped GID (::ffff:a.b.c.d); "
                               "give its network interface an IPv4 address or set gid_index",
                               d->name_, d->port_));
    }
  } else {
    d->gid_index_ = 0;
  }
  if (int rc = ibv_query_gid(d->context(), d->port_, d->gid_index_, &d->gid_); rc != 0)
    return errno_error(
        rc, fmt::format("ibv_query_gid({}, port {}, index {})", d->name_, d->port_, d->gid_index_));

  d->pd_.reset(ibv_alloc_pd(d->context()));
  if (!d->pd_) return errno_error(errno, fmt::format("ibv_alloc_pd({})", d->name_));
  log::debug("verbs: opened {} port {} ({}, active MTU {}, GID[{}] {})", d->name_, d->port_,
             d->is_roce() ? "RoCE" : "InfiniBand", to_string(d->port_attr_.active_mtu),
             d->gid_index_, gid_to_string(d->gid_));
  return d;
}

Result<ibv_port_attr> Device::query_port() const {
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(context(), port_, &pa); rc != 0)
    return errno_error(rc, fmt::format("ibv_query_port({}, {})", name_, port_));
  return pa;
}

int find_ipv4_mapped_gid(ibv_context* context, uint8_t port, int table_len) noexcept {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  for (int i = 0; i < table_len; ++i) {
    ibv_gid gid{};
    if (ibv_query_gid(context, port, i, &gid) != 0) continue;
    if (std::memcmp(gid.raw, kPrefix, sizeof kPrefix) == 0) return i;
  }
  return -1;
}

std::string gid_to_string(const ibv_gid& gid) {
  std::string s;
  for (int i = 0; i < 16; i += 2)
    s += fmt::format("{}{:02x}{:02x}", i == 0 ? "" : ":", gid.raw[i], gid.raw[i + 1]);
  return s;
}

std::string_view to_string(ibv_mtu mtu) noexcept {
  switch (mtu) {
    case IBV_MTU_256:
      return "256";
    case IBV_MTU_512:
      return "512";
    case IBV_MTU_1024:
      return "1024";
    case IBV_MTU_2048:
      return "2048";
    case IBV_MTU_4096:
      return "4096";
  }
  return "invalid";
}

std::string_view to_string(ibv_port_state state) noexcept {
  return ibv_port_state_str(state);
}

}  // namespace rdmarepl::transport::verbs
