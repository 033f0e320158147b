#include "rdmarepl/tuning/dataset.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <istream>
#include <ostream>
#include <string_view>
#include <unordered_map>

#include "rdmarepl/core/enum_text.h"
#include "rdmarepl/tuning/features.h"

namespace rdmarepl::tuning {

namespace {

constexpr std::string_view kOutBytes = "out_bytes_per_s";
constexpr std::string_view kOutP99 = "out_p99_us";

std::string cell(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : "";
}

void write_knobs(std::string& line, const Knobs& k) {
  line += fmt::format(",{},{},{},{},{},{}", k.batch_bytes, k.flush_delay_us, k.shards,
                      to_string(k.poll_mode), k.poll_interval_us, k.pool_bytes);
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string_view c =
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!c.empty() && (c.back() == ' ' || c.back() == '\r')) c.remove_suffix(1);
    while (!c.empty() && c.front() == ' ') c.remove_prefix(1);
    out.push_back(c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// Parses one row; `col` maps a column name to its index in `cells`.
class RowParser {
 public:
  RowParser(const std::unordered_map<std::string_view, size_t>& col,
            const std::vector<std::string_view>& cells, const std::string& origin, size_t line)
      : col_(col), cells_(cells), origin_(origin), line_(line) {}

  std::optional<double> optional(std::string_view name) {
    std::string_view c = cells_[col_.at(name)];
    if (c.empty() || c == "nan" || c == "NaN" || c == "NA") return std::nullopt;
    return number(name, c);
  }
  double required(std::string_view name) {
    std::string_view c = cells_[col_.at(name)];
    if (c.empty()) fail(name, c, "is empty but this column may not be missing");
    return number(name, c);
  }
  uint64_t integer(std::string_view name) {
    double v = required(name);
    if (v < 0 || v != std::floor(v) || v > 1.8e19)
      fail(name, cells_[col_.at(name)], "is not a non-negative integer");
    return static_cast<uint64_t>(v);
  }
  PollingMode poll_mode(std::string_view name) {
    std::string_view c = cells_[col_.at(name)];
    auto m = from_string<PollingMode>(c);
    if (!m || static_cast<int>(*m) >= kNumPollModes)
      fail(name, c, "is not a polling mode a tuner may choose (busy, sleep or blocking)");
    return m ? *m : PollingMode::busy;
  }
  Knobs knobs(std::string_view prefix) {
    auto n = [&](std::string_view k) {
      tmp_ = std::string(prefix) + std::string(k);
      return std::string_view(tmp_);
    };
    Knobs k;
    k.batch_bytes = integer(n("batch_bytes"));
    k.flush_delay_us = static_cast<uint32_t>(integer(n("flush_delay_us")));
    k.shards = static_cast<uint32_t>(integer(n("shards")));
    k.poll_mode = poll_mode(n("poll_mode"));
    k.poll_interval_us = static_cast<uint32_t>(integer(n("poll_interval_us")));
    k.pool_bytes = integer(n("pool_bytes"));
    return k;
  }
  [[nodiscard]] const std::optional<Error>& error() const { return error_; }

 private:
  double number(std::string_view name, std::string_view c) {
    std::string s(c);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v)) fail(name, c, "is not a finite number");
    return v;
  }
  void fail(std::string_view name, std::string_view c, std::string_view why) {
    if (!error_) {
      error_ =
          Error(Errc::corrupt, fmt::format("{}:{}: column {} value '{}' {}: fix or drop the row",
                                           origin_, line_, name, c, why));
    }
  }

  const std::unordered_map<std::string_view, size_t>& col_;
  const std::vector<std::string_view>& cells_;
  const std::string& origin_;
  size_t line_;
  std::string tmp_;
  std::optional<Error> error_;
};

// A feature that datasets written before it existed lack: such a dataset reads it as "not
// measured" (docs/tuning.md, "Dataset format").
constexpr std::string_view kWalSyncP99 = "wal_sync_p99_us";
// Measured and written, but not a model feature (docs/tuning.md): may be absent too.
constexpr std::string_view kLinkUtilization = "dev_link_utilization";

// Every column a dataset must have: the features (but kWalSyncP99) and the outcome.
std::string required_columns() {
  std::string h;
  for (auto n : feature_names()) {
    if (n == kWalSyncP99) continue;
    if (!h.empty()) h += ',';
    h += n;
  }
  h += fmt::format(",{},{}", kOutBytes, kOutP99);
  return h;
}

}  // namespace

std::string dataset_header() {
  std::string h;
  for (auto n : feature_names()) {
    if (!h.empty()) h += ',';
    h += n;
  }
  h += fmt::format(",{},{},{}", kLinkUtilization, kOutBytes, kOutP99);
  return h;
}

namespace {

std::optional<double> recorded(RowParser& p, std::string_view name, bool present) {
  return present ? p.optional(name) : std::nullopt;
}

}  // namespace

void write_dataset(std::ostream& out, std::span<const Sample> samples) {
  out << dataset_header() << '\n';
  std::string line;
  for (const auto& s : samples) {
    const Observation& o = s.observation;
    line = fmt::format("{},{},{},{},{},{},{},{},{},{},{}", o.window_s, o.latency_p50_us,
                       o.latency_p90_us, o.latency_p99_us, o.records_per_s, o.bytes_per_s,
                       o.value_mean_bytes, o.value_stddev_bytes, o.queue_depth, o.pending_bytes,
                       o.credit_stalls_per_s);
    for (const auto* v :
         {&o.cpu_utilization, &o.membw_ratio, &o.reg_cache_hit_rate, &o.device.tx_bytes_per_s,
          &o.device.rx_bytes_per_s, &o.device.tx_wait_per_s, &o.device.retransmits_per_s,
          &o.device.rnr_naks_per_s, &o.wal_sync_p99_us}) {
      line += ',';
      line += cell(*v);
    }
    write_knobs(line, s.observed_under);
    write_knobs(line, s.knobs);
    line += fmt::format(",{},{},{}\n", cell(o.device.link_utilization), s.outcome.bytes_per_s,
                        s.outcome.latency_p99_us);
    out << line;
  }
}

Status write_dataset(const std::string& path, std::span<const Sample> samples) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    return Error(Errc::io_error,
                 fmt::format("cannot create dataset file '{}': check the directory exists and is "
                             "writable",
                             path));
  }
  write_dataset(out, samples);
  out.flush();
  if (!out) {
    return Error(Errc::io_error,
                 fmt::format("writing dataset file '{}' failed (disk full?)", path));
  }
  return {};
}

Result<std::vector<Sample>> read_dataset(std::istream& in, const std::string& origin) {
  std::string header;
  if (!std::getline(in, header)) {
    return Error(Errc::corrupt, fmt::format("{}: empty dataset: the first line must be the header "
                                            "(see docs/tuning.md)",
                                            origin));
  }
  auto names = split(header);
  std::unordered_map<std::string_view, size_t> col;
  for (size_t i = 0; i < names.size(); ++i) col.emplace(names[i], i);
  std::string expected = required_columns();
  for (auto need : split(expected)) {
    if (!col.count(need)) {
      return Error(Errc::corrupt,
                   fmt::format("{}: header lacks column '{}': the header must contain every "
                               "column of: {}",
                               origin, need, expected));
    }
  }

  const bool has_sync = col.count(kWalSyncP99) != 0;
  const bool has_link = col.count(kLinkUtilization) != 0;
  std::vector<Sample> out;
  std::string line;
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    auto cells = split(line);
    if (cells.size() != names.size()) {
      return Error(Errc::corrupt,
                   fmt::format("{}:{}: row has {} cells but the header has {} columns (truncated "
                               "file?): fix or drop the row",
                               origin, lineno, cells.size(), names.size()));
    }
    RowParser p(col, cells, origin, lineno);
    Sample s;
    Observation& o = s.observation;
    o.window_s = p.required("window_s");
    o.latency_p50_us = p.required("lat_p50_us");
    o.latency_p90_us = p.required("lat_p90_us");
    o.latency_p99_us = p.required("lat_p99_us");
    o.records_per_s = p.required("records_per_s");
    o.bytes_per_s = p.required("bytes_per_s");
    o.value_mean_bytes = p.required("value_mean_bytes");
    o.value_stddev_bytes = p.required("value_stddev_bytes");
    o.queue_depth = p.required("queue_depth");
    o.pending_bytes = p.required("pending_bytes");
    o.credit_stalls_per_s = p.required("credit_stalls_per_s");
    o.cpu_utilization = p.optional("cpu_utilization");
    o.membw_ratio = p.optional("membw_ratio");
    o.reg_cache_hit_rate = p.optional("reg_cache_hit_rate");
    o.device.tx_bytes_per_s = p.optional("dev_tx_bytes_per_s");
    o.device.rx_bytes_per_s = p.optional("dev_rx_bytes_per_s");
    o.device.tx_wait_per_s = p.optional("dev_tx_wait_per_s");
    o.device.retransmits_per_s = p.optional("dev_retransmits_per_s");
    o.device.rnr_naks_per_s = p.optional("dev_rnr_naks_per_s");
    o.wal_sync_p99_us = recorded(p, kWalSyncP99, has_sync);
    o.device.link_utilization = recorded(p, kLinkUtilization, has_link);
    s.observed_under = p.knobs("cur_");
    s.knobs = p.knobs("");
    s.outcome.bytes_per_s = p.required(kOutBytes);
    s.outcome.latency_p99_us = p.required(kOutP99);
    if (p.error()) return *p.error();
    out.push_back(s);
  }
  return out;
}

Result<std::vector<Sample>> read_dataset(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Error(Errc::not_found,
                 fmt::format("cannot open dataset '{}': check the path (generate one with "
                             "`rdmarepl-tune generate`)",
                             path));
  }
  return read_dataset(in, path);
}

}  // namespace rdmarepl::tuning
