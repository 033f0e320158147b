#include "rdmarepl/metrics/prometheus/rnic_collector.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>

namespace rdmarepl::metrics {

namespace {

namespace fs = std::filesystem;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  if (!in || !std::getline(in, s)) return std::nullopt;
  return s;
}

// The leading unsigned integer of a sysfs value ("4: ACTIVE" -> 4, "1234" -> 1234).
std::optional<double> leading_number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return static_cast<double>(v);
}

// The text after "N: " ("4: ACTIVE" -> "ACTIVE").
std::string after_colon(std::string_view s) {
  auto c = s.find(": ");
  return c == std::string_view::npos ? std::string(s) : std::string(s.substr(c + 2));
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// Families by name, created on first use, emitted in name order.
class Families {
 public:
  void add(const std::string& name, const char* help, MetricType type, Labels labels, double v) {
    auto [it, fresh] = map_.try_emplace(name);
    if (fresh) {
      it->second.name = name;
      it->second.help = help;
      it->second.type = type;
    }
    ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    it->second.metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() {
    std::vector<MetricFamily> out;
    for (auto& [n, f] : map_) out.push_back(std::move(f));
    return out;
  }

 private:
  std::map<std::string, MetricFamily> map_;
};

// Every file of counters/ or hw_counters/ as one series of `family`, label `counter`.
void add_counter_dir(const fs::path& dir, const std::string& family, const char* help,
                     const Labels& base, Families& out) {
  for (const auto& f : entries(dir)) {
    const std::string name = f.filename().string();
    if (name == "lifespan") continue;  // hw_counters/lifespan is a setting (ms), not a count
    auto text = read_text(f);
    if (!text) continue;  // unreadable (permissions) or not a regular file
    auto v = leading_number(*text);
    if (!v) continue;
    Labels l = base;
    l.push_back({"counter", name});
    out.add(family, help, MetricType::Counter, l, *v);
    // node_exporter's byte counters: port_*_data counts 4-byte words.
    if (name == "port_xmit_data")
      out.add("rdmarepl_rnic_port_transmitted_bytes_total",
              "bytes transmitted by the port (port_xmit_data x 4)", MetricType::Counter, base,
              *v * 4);
    if (name == "port_rcv_data")
      out.add("rdmarepl_rnic_port_received_bytes_total",
              "bytes received by the port (port_rcv_data x 4)", MetricType::Counter, base, *v * 4);
  }
}

// "100 Gb/sec (4X EDR)" -> bytes per second.
std::optional<double> rate_bytes(std::string_view s) {
  auto gb = leading_number(s);
  if (!gb) return std::nullopt;
  double scale = s.find(" Gb/sec") != std::string_view::npos ? 1e9 : 0;
  if (scale == 0) return std::nullopt;
  // "2.5 Gb/sec": take the fraction too.
  auto dot = s.find('.');
  auto space = s.find(' ');
  if (dot != std::string_view::npos && dot < space) {
    if (auto frac = leading_number(s.substr(dot + 1, space - dot - 1)))
      *gb += *frac / std::pow(10.0, static_cast<double>(space - dot - 1));
  }
  return *gb * scale / 8;
}

void add_mtu(const fs::path& port, const std::string& net_root, const Labels& base, Families& out) {
  auto layer = read_text(port / "link_layer");
  if (!layer || *layer != "Ethernet") return;
  auto ndev = read_text(port / "gid_attrs" / "ndevs" / "0");
  if (!ndev || ndev->empty()) return;
  auto mtu_text = read_text(fs::path(net_root) / *ndev / "mtu");
  if (!mtu_text) return;
  auto mtu = leading_number(*mtu_text);
  if (!mtu) return;
  Labels l = base;
  l.push_back({"netdev", *ndev});
  out.add("rdmarepl_rnic_port_netdev_mtu_bytes", "MTU of the port's network device",
          MetricType::Gauge, l, *mtu);
  out.add("rdmarepl_rnic_port_active_mtu_bytes",
          "RDMA MTU in force: the largest IB MTU that fits the netdev MTU with RoCE v2 headers",
          MetricType::Gauge, base, RnicCollector::roce_active_mtu(static_cast<unsigned>(*mtu)));
}

void add_port(const std::string& device, const fs::path& port, const std::string& net_root,
              Families& out) {
  const Labels base{{"device", device}, {"port", port.filename().string()}};
  add_counter_dir(port / "counters", "rdmarepl_rnic_port_counter_total",
                  "an InfiniBand port counter (file under ports/<port>/counters)", base, out);
  add_counter_dir(port / "hw_counters", "rdmarepl_rnic_hw_counter_total",
                  "a device-specific port counter (file under ports/<port>/hw_counters)", base,
                  out);
  if (auto s = read_text(port / "state")) {
    Labels l = base;
    l.push_back({"state", after_colon(*s)});
    if (auto v = leading_number(*s))
      out.add("rdmarepl_rnic_port_state_id", "port state (4: ACTIVE)", MetricType::Gauge, l, *v);
  }
  if (auto s = read_text(port / "phys_state")) {
    Labels l = base;
    l.push_back({"state", after_colon(*s)});
    if (auto v = leading_number(*s))
      out.add("rdmarepl_rnic_port_physical_state_id", "physical port state (5: LinkUp)",
              MetricType::Gauge, l, *v);
  }
  if (auto s = read_text(port / "rate")) {
    if (auto v = rate_bytes(*s))
      out.add("rdmarepl_rnic_port_rate_bytes_per_second", "the port's signalling rate",
              MetricType::Gauge, base, *v);
  }
  add_mtu(port, net_root, base, out);
}

}  // namespace

unsigned RnicCollector::roce_active_mtu(unsigned netdev_mtu) noexcept {
  // The kernel's iboe_get_mtu(): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4.
  constexpr unsigned kHeaders = 96;
  if (netdev_mtu < kHeaders + 256) return 0;
  const unsigned room = netdev_mtu - kHeaders;
  for (unsigned mtu = 4096; mtu >= 256; mtu /= 2)
    if (mtu <= room) return mtu;
  return 0;
}

std::vector<MetricFamily> RnicCollector::Collect() const {
  Families out;
  for (const auto& dev : entries(root_)) {
    for (const auto& port : entries(dev / "ports"))
      add_port(dev.filename().string(), port, net_root_, out);
  }
  return out.take();
}

}  // namespace rdmarepl::metrics
