#include "rdmarepl/metrics/prometheus/rnic_collector.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "rdmarepl/metrics/prometheus/process_collector.h"
#include "scrape_text.h"

namespace fs = std::filesystem;
using rdmarepl::metrics::RnicCollector;
using rdmarepl::testing::scrape;

namespace {

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

struct FakeSysfs {
  fs::path dir = fs::temp_directory_path() / ("rdmarepl-sysfs-" + std::to_string(::getpid()));
  FakeSysfs() {
    fs::remove_all(dir);
    const fs::path port = dir / "infiniband" / "rxe0" / "ports" / "1";
    put(port / "counters" / "port_xmit_data", "250");
    put(port / "counters" / "port_rcv_data", "1000");
    put(port / "counters" / "port_xmit_packets", "17");
    put(port / "hw_counters" / "sent_pkts", "17");
    put(port / "hw_counters" / "rcvd_rnr_err", "2");
    put(port / "hw_counters" / "lifespan", "10");
    put(port / "state", "4: ACTIVE");
    put(port / "phys_state", "5: LinkUp");
    put(port / "rate", "2.5 Gb/sec (1X SDR)");
    put(port / "link_layer", "Ethernet");
    put(port / "gid_attrs" / "ndevs" / "0", "eth0");
    put(dir / "net" / "eth0" / "mtu", "1500");
    // A second device with an InfiniBand port: no netdev, no MTU series.
    const fs::path ib = dir / "infiniband" / "mlx5_0" / "ports" / "1";
    put(ib / "counters" / "port_rcv_errors", "3");
    put(ib / "state", "1: DOWN");
    put(ib / "link_layer", "InfiniBand");
  }
  ~FakeSysfs() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("the RNIC collector exports every counter file, port state, rate and MTU") {
  FakeSysfs sys;
  RnicCollector c((sys.dir / "infiniband").string(), (sys.dir / "net").string());
  std::string text;
  auto s = scrape(c, &text);
  INFO(text);
  const std::string rxe = R"(device="rxe0",port="1")";
  CHECK(s["rdmarepl_rnic_port_counter_total{" + rxe + R"(,counter="port_xmit_data"})"] == 250);
  CHECK(s["rdmarepl_rnic_port_counter_total{" + rxe + R"(,counter="port_xmit_packets"})"] == 17);
  CHECK(s["rdmarepl_rnic_port_transmitted_bytes_total{" + rxe + "}"] == 1000);
  CHECK(s["rdmarepl_rnic_port_received_bytes_total{" + rxe + "}"] == 4000);
  CHECK(s["rdmarepl_rnic_hw_counter_total{" + rxe + R"(,counter="sent_pkts"})"] == 17);
  CHECK(s["rdmarepl_rnic_hw_counter_total{" + rxe + R"(,counter="rcvd_rnr_err"})"] == 2);
  CHECK(s.count("rdmarepl_rnic_hw_counter_total{" + rxe + R"(,counter="lifespan"})") == 0);
  CHECK(s["rdmarepl_rnic_port_state_id{" + rxe + R"(,state="ACTIVE"})"] == 4);
  CHECK(s["rdmarepl_rnic_port_physical_state_id{" + rxe + R"(,state="LinkUp"})"] == 5);
  CHECK(s["rdmarepl_rnic_port_rate_bytes_per_second{" + rxe + "}"] == Approx(2.5e9 / 8));
  CHECK(s["rdmarepl_rnic_port_netdev_mtu_bytes{" + rxe + R"(,netdev="eth0"})"] == 1500);
  CHECK(s["rdmarepl_rnic_port_active_mtu_bytes{" + rxe + "}"] == 1024);

  const std::string mlx = R"(device="mlx5_0",port="1")";
  CHECK(s["rdmarepl_rnic_port_counter_total{" + mlx + R"(,counter="port_rcv_errors"})"] == 3);
  CHECK(s["rdmarepl_rnic_port_state_id{" + mlx + R"(,state="DOWN"})"] == 1);
  CHECK(s.count("rdmarepl_rnic_port_active_mtu_bytes{" + mlx + "}") == 0);
}

TEST_CASE("the RNIC collector reads the counters anew on every scrape") {
  FakeSysfs sys;
  RnicCollector c((sys.dir / "infiniband").string(), (sys.dir / "net").string());
  const std::string key =
      R"(rdmarepl_rnic_hw_counter_total{device="rxe0",port="1",counter="sent_pkts"})";
  CHECK(scrape(c)[key] == 17);
  put(sys.dir / "infiniband" / "rxe0" / "ports" / "1" / "hw_counters" / "sent_pkts", "99");
  CHECK(scrape(c)[key] == 99);
}

TEST_CASE("a host without RDMA devices exports nothing") {
  RnicCollector c("/nonexistent/infiniband", "/nonexistent/net");
  CHECK(c.Collect().empty());
}

TEST_CASE("RoCE active MTU follows the netdev MTU") {
  CHECK(RnicCollector::roce_active_mtu(1500) == 1024);
  CHECK(RnicCollector::roce_active_mtu(9000) == 4096);
  CHECK(RnicCollector::roce_active_mtu(4200) == 4096);
  CHECK(RnicCollector::roce_active_mtu(4000) == 2048);
  CHECK(RnicCollector::roce_active_mtu(300) == 0);
}

TEST_CASE("docs/operations.md names every metric the RNIC and process collectors export") {
  std::ifstream in(RDMAREPL_DOCS_DIR "/operations.md");
  REQUIRE(in);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FakeSysfs sys;
  auto families =
      RnicCollector((sys.dir / "infiniband").string(), (sys.dir / "net").string()).Collect();
  auto process = rdmarepl::metrics::ProcessCollector("n").Collect();
  families.insert(families.end(), process.begin(), process.end());
  CHECK(families.size() >= 11);
  for (const auto& family : families) {
    INFO(family.name);
    CHECK(doc.find("`" + family.name + "`") != std::string::npos);
  }
}
