// Device selection and GID choice on the VM's rxe device.
#include <fmt/format.h>

#include <fstream>

#include "pair.h"

namespace rdmarepl::transport::verbs::test {

TEST_CASE("the named device opens with the IPv4-mapped RoCE v2 GID", "[verbs]") {
  auto opts = vm_options();
  REQUIRE_FALSE(opts.device.name.empty());  // set by the VM harness
  auto d = Device::open(opts.device);
  REQUIRE(d);
  const Device& dev = **d;
  CHECK(dev.name() == opts.device.name);
  CHECK(dev.is_roce());
  CHECK(dev.port() == 1);
  CHECK(dev.port_attr().state == IBV_PORT_ACTIVE);
  // ::ffff:10.9.0.1, as the harness addressed veth0.
  const std::string gid = gid_to_string(dev.gid());
  CHECK(gid == "0000:0000:0000:0000:0000:ffff:0a09:0001");
  // The same entry the kernel shows in sysfs at that index.
  std::ifstream sys(
      fmt::format("/sys/class/infiniband/{}/ports/1/gids/{}", dev.name(), dev.gid_index()));
  std::string line;
  std::getline(sys, line);
  CHECK(line == gid);
  CHECK(dev.gid_index() > 0);  // index 0 is the link-local fe80 entry
}

TEST_CASE("without a name the first device with an active port is chosen", "[verbs]") {
  auto d = Device::open(DeviceOptions{});
  REQUIRE(d);
  CHECK((*d)->name() == vm_options().device.name);
  auto report = probe();
  CHECK(report.usable);
  CHECK(report.device == (*d)->name());
  CHECK(report.reason.empty());
}

TEST_CASE("an unknown device name is no_device, listing what exists", "[verbs]") {
  auto d = Device::open(DeviceOptions{"mlx5_9", 0, -1});
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().is(Errc::no_device));
  CHECK_THAT(d.error().message(), Catch::Contains("mlx5_9"));
  CHECK_THAT(d.error().message(), Catch::Contains(vm_options().device.name));
  auto report = probe(DeviceOptions{"mlx5_9", 0, -1});
  CHECK_FALSE(report.usable);
  CHECK_THAT(report.reason, Catch::Contains("mlx5_9"));
}

TEST_CASE("an explicit GID index is honoured and range-checked", "[verbs]") {
  auto opts = vm_options();
  opts.device.gid_index = 0;
  auto d = Device::open(opts.device);
  REQUIRE(d);
  CHECK((*d)->gid_index() == 0);
  opts.device.gid_index = 100000;
  auto bad = Device::open(opts.device);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::invalid_argument));
  CHECK_THAT(bad.error().message(), Catch::Contains("100000"));
}

}  // namespace rdmarepl::transport::verbs::test
