// The doctor's checks on fake sysfs/procfs trees: every verdict each check can give, and the
// advice that comes with it.
#include <catch2/catch.hpp>

#include "doctor/fake_tree.h"
#include "host_checks.h"
#include "rdma_checks.h"

using namespace rdmarepl;
using namespace rdmarepl::doctor;
using rdmarepl::test::FakeTree;

namespace {

bool has(const Check& c, std::string_view s) {
  return c.detail.find(s) != std::string::npos || c.advice.find(s) != std::string::npos;
}

ChannelNeeds leader_needs() {
  return needs_of(replication::ChannelOptions{}, 2);
}

// A queried device as libibverbs would describe rxe.
DeviceFacts queried(DeviceFacts d) {
  d.queried = true;
  d.max_mr_size = uint64_t{1} << 40;
  d.max_qp = 1024;
  d.max_qp_wr = 16384;
  d.max_qp_rd_atom = 128;
  d.max_inline_data = 240;
  for (auto& p : d.ports) p.active_mtu = 1024;
  return d;
}

}  // namespace

TEST_CASE("doctor: the channel's needs follow its options", "[doctor]") {
  replication::ChannelOptions o;
  o.shards = 2;
  o.retain_bytes = 8 << 20;
  o.zero_copy_pool_bytes = 4 << 20;
  auto n = needs_of(o, 3);
  CHECK(n.registered_bytes == (2 * (8 << 20) + (4 << 20)));
  CHECK(n.largest_region == 2 * (8 << 20));  // the windows' arena
  CHECK(n.queue_pairs == 6);
  o.role = replication::Role::follower;
  o.ring_bytes = 1 << 20;
  o.max_value_bytes = 2 << 20;
  n = needs_of(o, 3);
  CHECK(n.registered_bytes == 2u * 2 * (3 << 20));
  CHECK(n.largest_region == 2u * (3 << 20));  // one generation's arena
  CHECK(n.queue_pairs == 2);
}

TEST_CASE("doctor: without RDMA every RDMA check fails with the reason", "[doctor]") {
  FakeTree t;
  auto devices = read_sysfs_devices(SysRoot(t.root()));
  REQUIRE(devices.empty());
  auto checks = rdma_checks(devices, SysRoot(t.root()), leader_needs());
  REQUIRE(checks.size() == 6);
  for (const auto& c : checks) {
    CHECK(c.verdict == Verdict::fail);
    CHECK(has(c, "no RDMA device"));
    CHECK(has(c, "transport=tcp"));
  }
}

TEST_CASE("doctor: an rxe-like port passes and its MTU without jumbo frames warns", "[doctor]") {
  FakeTree t;
  t.add_roce_port("rxe0", "ACTIVE", "eth0", 1500);
  SysRoot root(t.root());
  auto devices = read_sysfs_devices(root);
  REQUIRE(devices.size() == 1);
  REQUIRE(devices[0].ports.size() == 1);
  CHECK(devices[0].ports[0].gids.size() == 2);  // the all-zero entry is not a GID
  devices[0] = queried(devices[0]);
  CHECK(check_ports(devices)[0].verdict == Verdict::pass);
  auto gid = check_gids(devices)[0];
  CHECK(gid.verdict == Verdict::pass);
  CHECK(has(gid, "index 1"));
  CHECK(has(gid, "on eth0"));
  CHECK(check_opcodes(devices)[0].verdict == Verdict::pass);
  auto mtu = check_mtus(devices, root)[0];
  CHECK(mtu.verdict == Verdict::warn);
  CHECK(has(mtu, "active MTU 1024, netdev eth0 MTU 1500"));
  CHECK(has(mtu, "ip link set eth0 mtu 9000"));
  for (const auto& c : check_limits(devices, leader_needs())) CHECK(c.verdict == Verdict::pass);

  t.write("/sys/class/net/eth0/mtu", "9000");
  devices[0].ports[0].active_mtu = 4096;
  CHECK(check_mtus(devices, root)[0].verdict == Verdict::pass);
}

TEST_CASE("doctor: a port that is down and a GID table without RoCE v2 fail", "[doctor]") {
  FakeTree t;
  t.add_roce_port("mlx5_0", "DOWN", "ens1", 9000, /*with_v2=*/false);
  auto devices = read_sysfs_devices(SysRoot(t.root()));
  auto port = check_ports(devices)[0];
  CHECK(port.verdict == Verdict::fail);
  CHECK(port.name == "port mlx5_0/1");
  CHECK(has(port, "DOWN"));
  CHECK(has(port, "ip link set"));
  auto gid = check_gids(devices)[0];
  CHECK(gid.verdict == Verdict::fail);
  CHECK(has(gid, "no RoCE v2 entry"));
}

TEST_CASE("doctor: device limits below the channel's needs fail and name the option", "[doctor]") {
  FakeTree t;
  t.add_roce_port("rxe0", "ACTIVE", "eth0", 9000);
  auto devices = read_sysfs_devices(SysRoot(t.root()));
  devices[0] = queried(devices[0]);
  devices[0].max_mr_size = 1 << 20;
  devices[0].max_qp = 4;
  devices[0].max_inline_data = 32;
  auto limits = check_limits(devices, leader_needs());
  REQUIRE(limits.size() == 4);
  CHECK(limits[0].verdict == Verdict::fail);
  CHECK(has(limits[0], "retain_bytes"));
  CHECK(limits[1].verdict == Verdict::fail);
  CHECK(has(limits[1], "8"));  // 4 shards x 2 followers
  CHECK(limits[2].verdict == Verdict::pass);
  CHECK(limits[3].verdict == Verdict::warn);

  devices[0].iwarp = true;
  CHECK(check_opcodes(devices)[0].verdict == Verdict::fail);
  devices[0].queried = false;
  devices[0].verbs_error = "ibv_open_device(rxe0) failed: Permission denied";
  auto c = check_limits(devices, leader_needs())[0];
  CHECK(c.verdict == Verdict::fail);
  CHECK(has(c, "Permission denied"));
}

TEST_CASE("doctor: an InfiniBand port needs no GID and wants MTU 4096", "[doctor]") {
  FakeTree t;
  t.write("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE");
  t.write("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  auto devices = queried(read_sysfs_devices(SysRoot(t.root()))[0]);
  std::vector<DeviceFacts> ds{devices};
  CHECK(check_gids(ds)[0].verdict == Verdict::pass);
  auto mtu = check_mtus(ds, SysRoot(t.root()))[0];
  CHECK(mtu.verdict == Verdict::warn);
  CHECK(has(mtu, "opensm"));
  ds[0].ports[0].active_mtu = 4096;
  CHECK(check_mtus(ds, SysRoot(t.root()))[0].verdict == Verdict::pass);
}

TEST_CASE("doctor: memlock below the pool fails or warns under CAP_IPC_LOCK", "[doctor]") {
  FakeTree t;
  SysRoot root(t.root());
  const auto needs = leader_needs();
  CHECK(check_memlock(root, kUnlimited, needs).verdict == Verdict::pass);
  CHECK(check_memlock(root, needs.registered_bytes, needs).verdict == Verdict::pass);
  t.write("/proc/self/status", "Name:\tstore\nCapEff:\t0000000000000000");
  auto c = check_memlock(root, 64 * 1024, needs);
  CHECK(c.verdict == Verdict::fail);
  CHECK(has(c, "locked-memory limit 64 KiB (ulimit -l 64)"));
  CHECK(has(c, "ulimit -l unlimited"));
  t.write("/proc/self/status", "Name:\tstore\nCapEff:\t000001ffffffffff");
  CHECK(check_memlock(root, 64 * 1024, needs).verdict == Verdict::warn);
}

TEST_CASE("doctor: huge pages and overcommit and irqbalance and the governor", "[doctor]") {
  FakeTree t;
  SysRoot root(t.root());
  const auto needs = leader_needs();  // 272 MiB: 136 pages of 2 MiB
  t.write("/proc/meminfo",
          "HugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:    2048 kB");
  auto hp = check_hugepages(root, needs);
  CHECK(hp.verdict == Verdict::warn);
  CHECK(has(hp, "vm.nr_hugepages=136"));
  t.write("/proc/meminfo",
          "HugePages_Total:     200\nHugePages_Free:      150\nHugepagesize:    2048 kB");
  CHECK(check_hugepages(root, needs).verdict == Verdict::pass);

  CHECK(check_overcommit(root).verdict == Verdict::warn);  // unreadable
  t.write("/proc/sys/vm/overcommit_memory", "0");
  CHECK(check_overcommit(root).verdict == Verdict::pass);
  t.write("/proc/sys/vm/overcommit_memory", "2");
  CHECK(has(check_overcommit(root), "vm.overcommit_memory=0"));

  t.write("/proc/1/comm", "init");
  CHECK(check_irqbalance(root).verdict == Verdict::warn);
  t.write("/proc/612/comm", "irqbalance");
  auto irq = check_irqbalance(root);
  CHECK(irq.verdict == Verdict::pass);
  CHECK(has(irq, "pid 612"));

  CHECK(check_governor(root).verdict == Verdict::warn);  // no cpufreq
  t.write("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance");
  t.write("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance");
  CHECK(check_governor(root).verdict == Verdict::pass);
  t.write("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave");
  auto gov = check_governor(root);
  CHECK(gov.verdict == Verdict::warn);
  CHECK(has(gov, "powersave on 1 CPUs"));
  CHECK(has(gov, "cpupower frequency-set -g performance"));
}

TEST_CASE("doctor: a line per check and an exit status that says whether one failed", "[doctor]") {
  Check warn{Verdict::warn, "irqbalance", "not running", "start it"};
  CHECK(format_line(warn) == "WARN irqbalance: not running; fix: start it");
  CHECK(format_line({Verdict::pass, "mtu", "4096", ""}) == "PASS mtu: 4096");
  CHECK_FALSE(any_failed({warn}));
  CHECK(any_failed({warn, {Verdict::fail, "x", "y", "z"}}));
  CHECK(human_bytes(64 * 1024) == "64 KiB");
  CHECK(human_bytes(uint64_t{272} << 20) == "272 MiB");
}
