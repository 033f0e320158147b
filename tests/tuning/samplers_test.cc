#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "rdmarepl/tuning/samplers.h"

using namespace rdmarepl::tuning;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("rdmarepl_tuning_" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void put(const fs::path& file, uint64_t v) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << v << "\n";
}

}  // namespace

TEST_CASE("CpuSampler::utilization divides CPU time by wall time and cores", "[tuning]") {
  CHECK(*CpuSampler::utilization(0.5, 1.0, 2) == Approx(0.25));
  CHECK(*CpuSampler::utilization(3.0, 1.0, 2) == Approx(1.0));  // capped
  CHECK_FALSE(CpuSampler::utilization(0.5, 0.0, 2).has_value());
  CHECK_FALSE(CpuSampler::utilization(0.5, 1.0, 0).has_value());
  CpuSampler s;
  CHECK(s.cores() >= 1);
  volatile double sink = 0;
  for (int i = 0; i < 2'000'000; ++i) sink = sink + i * 0.5;
  auto u = s.sample();
  REQUIRE(u.has_value());
  CHECK(*u >= 0.0);
  CHECK(*u <= 1.0);
}

TEST_CASE("DeviceCounterSampler: rates from sysfs counters, absent counters stay absent",
          "[tuning]") {
  TempDir d;
  fs::path port = d.path / "rxe0" / "ports" / "1";
  put(port / "counters" / "port_xmit_data", 1000);
  put(port / "counters" / "port_rcv_data", 50);
  put(port / "hw_counters" / "rnr_nak_retry_err", 3);
  fs::path port2 = d.path / "mlx5_0" / "ports" / "1";
  put(port2 / "counters" / "port_xmit_data", 500);

  auto totals = read_device_counters(d.path.string());
  CHECK(totals.values.at("port_xmit_data") == 1500);

  DeviceCounterSampler s(d.path.string());
  DeviceRates first = s.sample(totals, 1'000'000'000);
  CHECK_FALSE(first.tx_bytes_per_s.has_value());  // nothing to difference against yet

  put(port / "counters" / "port_xmit_data", 3000);  // +2000 words
  put(port / "hw_counters" / "rnr_nak_retry_err", 7);
  DeviceRates r = s.sample(read_device_counters(d.path.string()), 3'000'000'000);  // 2 s later
  REQUIRE(r.tx_bytes_per_s.has_value());
  CHECK(*r.tx_bytes_per_s == Approx(2000.0 * 4 / 2));
  REQUIRE(r.rx_bytes_per_s.has_value());
  CHECK(*r.rx_bytes_per_s == Approx(0.0));
  REQUIRE(r.rnr_naks_per_s.has_value());
  CHECK(*r.rnr_naks_per_s == Approx(2.0));
  CHECK_FALSE(r.tx_wait_per_s.has_value());  // not exposed: absent, not zero
  CHECK_FALSE(r.retransmits_per_s.has_value());
}

TEST_CASE("DeviceCounterSampler reads Soft-RoCE's own counter names", "[tuning]") {
  // The hw_counters rxe exposes (Linux 6.1); it has no `counters` directory, so no byte
  // counters: bytes stay absent, retries and RNR NAKs are rates.
  TempDir d;
  fs::path hw = d.path / "rxe0" / "ports" / "1" / "hw_counters";
  for (const char* name :
       {"ack_deferred", "duplicate_request", "link_downed", "out_of_seq_request", "rcvd_pkts",
        "rcvd_seq_err", "rdma_recvs", "rdma_sends", "retry_exceeded_err", "retry_rnr_exceeded_err",
        "send_err", "send_rnr_err", "sent_pkts", "lifespan"})
    put(hw / name, 0);
  put(hw / "completer_retry_err", 10);
  put(hw / "rcvd_rnr_err", 4);
  DeviceCounterSampler s(d.path.string());
  (void)s.sample(read_device_counters(d.path.string()), 1'000'000'000);
  put(hw / "completer_retry_err", 16);
  put(hw / "rcvd_rnr_err", 5);
  DeviceRates r = s.sample(read_device_counters(d.path.string()), 3'000'000'000);  // 2 s later
  REQUIRE(r.retransmits_per_s.has_value());
  CHECK(*r.retransmits_per_s == Approx(3.0));
  REQUIRE(r.rnr_naks_per_s.has_value());
  CHECK(*r.rnr_naks_per_s == Approx(0.5));
  CHECK_FALSE(r.tx_bytes_per_s.has_value());
  CHECK_FALSE(r.link_utilization.has_value());
}

TEST_CASE("read_device_counters on a missing root is empty, not an error", "[tuning]") {
  CHECK(read_device_counters("/nonexistent/rdmarepl/sys/class/infiniband").values.empty());
  DeviceCounterSampler s("/nonexistent/rdmarepl");
  (void)s.sample();
  DeviceRates r = s.sample();
  CHECK_FALSE(r.tx_bytes_per_s.has_value());
}

TEST_CASE("port rates parse, and link utilisation is transmitted bytes over them", "[tuning]") {
  CHECK(*parse_port_rate("100 Gb/sec (4X EDR)") == Approx(12.5e9));
  CHECK(*parse_port_rate("2.5 Gb/sec (1X SDR)\n") == Approx(312.5e6));
  CHECK(*parse_port_rate("100 Mb/sec") == Approx(12.5e6));
  CHECK_FALSE(parse_port_rate("").has_value());
  CHECK_FALSE(parse_port_rate("fast").has_value());
  CHECK_FALSE(parse_port_rate("0 Gb/sec").has_value());
  CHECK_FALSE(parse_port_rate("10 furlongs").has_value());

  TempDir d;
  fs::path port = d.path / "rxe0" / "ports" / "1";
  put(port / "counters" / "port_xmit_data", 0);
  std::ofstream(port / "rate") << "1 Gb/sec (1X SDR)\n";
  auto totals = read_device_counters(d.path.string());
  CHECK(totals.link_bytes_per_s == Approx(125e6));
  DeviceCounterSampler s(d.path.string());
  (void)s.sample(totals, 1'000'000'000);
  put(port / "counters" / "port_xmit_data", 12'500'000);  // 50 MB in 4-byte words
  DeviceRates r = s.sample(read_device_counters(d.path.string()), 2'000'000'000);  // 1 s later
  REQUIRE(r.link_utilization.has_value());
  CHECK(*r.link_utilization == Approx(0.4));

  fs::remove(port / "rate");  // no rate: no utilisation, whatever was sent
  put(port / "counters" / "port_xmit_data", 25'000'000);
  r = s.sample(read_device_counters(d.path.string()), 3'000'000'000);
  CHECK(r.tx_bytes_per_s.has_value());
  CHECK_FALSE(r.link_utilization.has_value());
}
