#include "run_config.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <algorithm>
#include <bit>

#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::kvdemo {

using replication::AckMode;
using replication::PollingMode;
using replication::TransportKind;

std::string wal_dir_of(const RunConfig& c, int index) {
  if (c.wal_dir.empty()) return {};
  return c.wal_dir + (index < 0 ? "/leader" : "/follower-" + std::to_string(index + 1));
}

Status empty_wal_dirs(const RunConfig& c) {
  if (c.wal_dir.empty()) return ok_status();
  std::error_code ec;
  std::filesystem::create_directories(c.wal_dir, ec);
  if (ec)
    return Error(Errc::io_error,
                 fmt::format("cannot create the log directory {}: {}", c.wal_dir, ec.message()));
  for (int i = -1; i < static_cast<int>(c.followers); ++i) {
    std::filesystem::remove_all(wal_dir_of(c, i), ec);
    if (ec)
      return Error(Errc::io_error, fmt::format("cannot empty the log directory {}: {}",
                                               wal_dir_of(c, i), ec.message()));
  }
  return ok_status();
}

Status read_key_file(const std::string& path, RunConfig& c) {
  std::ifstream in(path, std::ios::binary);
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    return Error(Errc::invalid_argument, "--key-file " + path + " cannot be read");
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.empty())
    return Error(Errc::invalid_argument,
                 "--key-file " + path + " is empty or missing; put the pre-shared key in it");
  c.key_file = path;
  c.pre_shared_key = std::move(key);
  return ok_status();
}

std::vector<std::string> run_config_flag_names() {
  return {"transport",      "ack",          "polling",      "followers",     "records",
          "key-size",       "value-size",   "keyspace",     "erase-percent", "seed",
          "batch-bytes",    "shards",       "retain-bytes", "poll-us",       "flush-us",
          "leader-polling", "store",        "ring-bytes",   "wal-dir",       "durability",
          "outstanding",    "metrics-port", "key-file",     "read-keys"};
}

std::vector<std::string> to_args(const RunConfig& c) {
  const auto& w = c.workload;
  return {"--transport",
          std::string(to_string(c.transport)),
          "--ack",
          std::string(to_string(c.ack)),
          "--polling",
          std::string(to_string(c.polling)),
          "--leader-polling",
          std::string(to_string(c.leader_polling)),
          "--store",
          c.digest_only_store ? "digest" : "map",
          "--ring-bytes",
          std::to_string(c.ring_bytes),
          "--followers",
          std::to_string(c.followers),
          "--records",
          std::to_string(w.records),
          "--key-size",
          std::to_string(w.key_size),
          "--value-size",
          std::to_string(w.value_min) + "-" + std::to_string(w.value_max),
          "--keyspace",
          std::to_string(w.keyspace),
          "--erase-percent",
          std::to_string(w.erase_percent),
          "--seed",
          std::to_string(w.seed),
          "--batch-bytes",
          std::to_string(c.batch_bytes),
          "--shards",
          std::to_string(c.shards),
          "--retain-bytes",
          std::to_string(c.retain_bytes),
          "--poll-us",
          std::to_string(c.poll_us),
          "--flush-us",
          std::to_string(c.flush_us),
          "--outstanding",
          std::to_string(c.outstanding),
          "--wal-dir",
          c.wal_dir,
          "--durability",
          std::string(to_string(c.durability)),
          "--metrics-port",
          std::to_string(c.metrics_port),
          "--key-file",
          c.key_file,
          "--read-keys",
          std::to_string(c.read_keys)};
}

Status apply_flags(const Flags& f, RunConfig& c) {
  if (f.has("transport")) {
    auto t = parse_enum<TransportKind>(f.get("transport"), "--transport");
    if (!t) return std::move(t).error();
    c.transport = *t;
  }
  if (f.has("ack")) {
    auto a = parse_enum<AckMode>(f.get("ack"), "--ack");
    if (!a) return std::move(a).error();
    c.ack = *a;
  }
  if (f.has("polling")) {
    auto p = parse_enum<PollingMode>(f.get("polling"), "--polling");
    if (!p) return std::move(p).error();
    c.polling = *p;
  }
  if (f.has("store")) {
    std::string st = f.get("store");
    if (st != "map" && st != "digest") {
      return Error(Errc::invalid_argument,
                   "--store '" + st + "' is not map (keep values) or digest (keep hashes)");
    }
    c.digest_only_store = st == "digest";
  }
  if (f.has("wal-dir")) c.wal_dir = f.get("wal-dir");
  if (f.has("key-file") && !f.get("key-file").empty())
    RDMAREPL_TRY(read_key_file(f.get("key-file"), c));
  if (f.has("durability")) {
    auto d = parse_enum<replication::Durability>(f.get("durability"), "--durability");
    if (!d) return std::move(d).error();
    c.durability = *d;
  }
  if (f.has("leader-polling")) {
    auto p = parse_enum<PollingMode>(f.get("leader-polling"), "--leader-polling");
    if (!p) return std::move(p).error();
    c.leader_polling = *p;
  }
  auto u64 = [&](const char* name, uint64_t& out) -> Status {
    auto v = f.get_u64(name, out);
    if (!v) return std::move(v).error();
    out = *v;
    return ok_status();
  };
  auto u32 = [&](const char* name, uint32_t& out) -> Status {
    uint64_t v = out;
    RDMAREPL_TRY(u64(name, v));
    if (v > UINT32_MAX) {
      return Error(Errc::invalid_argument, std::string("--") + name + " " + std::to_string(v) +
                                               " is too large (at most 4294967295)");
    }
    out = static_cast<uint32_t>(v);
    return ok_status();
  };
  auto& w = c.workload;
  RDMAREPL_TRY(u32("followers", c.followers));
  RDMAREPL_TRY(u64("records", w.records));
  RDMAREPL_TRY(u32("key-size", w.key_size));
  RDMAREPL_TRY(u64("keyspace", w.keyspace));
  RDMAREPL_TRY(u32("erase-percent", w.erase_percent));
  RDMAREPL_TRY(u64("seed", w.seed));
  RDMAREPL_TRY(u64("batch-bytes", c.batch_bytes));
  RDMAREPL_TRY(u32("shards", c.shards));
  RDMAREPL_TRY(u64("retain-bytes", c.retain_bytes));
  RDMAREPL_TRY(u64("poll-us", c.poll_us));
  RDMAREPL_TRY(u64("ring-bytes", c.ring_bytes));
  RDMAREPL_TRY(u64("flush-us", c.flush_us));
  RDMAREPL_TRY(u64("outstanding", c.outstanding));
  RDMAREPL_TRY(u32("metrics-port", c.metrics_port));
  RDMAREPL_TRY(u64("read-keys", c.read_keys));
  if (f.has("value-size")) {
    auto r = parse_range(f.get("value-size"), "--value-size");
    if (!r) return std::move(r).error();
    if (r->second > (64u << 20)) {
      return Error(Errc::invalid_argument, "--value-size " + f.get("value-size") +
                                               ": values up to 64 MiB are supported here");
    }
    w.value_min = static_cast<uint32_t>(r->first);
    w.value_max = static_cast<uint32_t>(r->second);
  }
  return validate(c);
}

Status validate(const RunConfig& c) {
  const auto& w = c.workload;
  if (c.followers < 1 || c.followers > replication::kMaxFollowers) {
    return Error(Errc::invalid_argument, "--followers " + std::to_string(c.followers) +
                                             " is out of range; use 1.." +
                                             std::to_string(replication::kMaxFollowers));
  }
  if (c.metrics_port != 0 && c.metrics_port + c.followers > 65535) {
    return Error(Errc::invalid_argument,
                 "--metrics-port " + std::to_string(c.metrics_port) +
                     " leaves no room for one port per follower above it; use a lower port");
  }
  if (c.read_keys != 0 && c.digest_only_store) {
    return Error(Errc::invalid_argument,
                 "--read-keys needs stores that keep values; use --store map (or --read-keys 0)");
  }
  if (w.key_size < 8 || w.key_size > 1024) {
    return Error(Errc::invalid_argument, "--key-size " + std::to_string(w.key_size) +
                                             " is out of range; use 8..1024 bytes");
  }
  if (w.records == 0) {
    return Error(Errc::invalid_argument, "--records must be at least 1");
  }
  if (w.erase_percent > 50) {
    return Error(Errc::invalid_argument,
                 "--erase-percent " + std::to_string(w.erase_percent) + " is too high; use 0..50");
  }
  return ok_status();
}

namespace {
void common_options(const RunConfig& c, replication::ChannelOptions& o) {
  o.transport = c.transport;
  o.ack_mode = c.ack;
  o.polling = c.polling;
  if (c.shards != 0) o.shards = c.shards;
  if (c.batch_bytes != 0) o.batch_bytes = c.batch_bytes;
  if (c.poll_us != 0) o.poll_interval = std::chrono::microseconds(c.poll_us);
  if (c.flush_us != 0) o.flush_delay = std::chrono::microseconds(c.flush_us);
  // The largest value must fit one record; leave room for the key and the headers.
  o.max_value_bytes = std::max<size_t>(c.workload.value_max, 4096);
  o.durability = c.durability;
  o.pre_shared_key = c.pre_shared_key;
  // The receive ring holds several full batches and the largest record several times over.
  size_t ring_min = 8 * std::max<size_t>(o.batch_bytes, c.workload.value_max + 4096);
  o.ring_bytes = std::max(o.ring_bytes, std::bit_ceil(ring_min));
  // The ring bounds the bytes in flight to a follower: throughput <= ring / round trip.
  if (c.ring_bytes != 0) o.ring_bytes = std::max<size_t>(c.ring_bytes, std::bit_ceil(ring_min));
}
}  // namespace

replication::ChannelOptions leader_options(const RunConfig& c,
                                           std::vector<transport::Endpoint> peers) {
  replication::ChannelOptions o;
  o.role = replication::Role::leader;
  o.node_id = "leader";
  o.peers = std::move(peers);
  common_options(c, o);
  o.polling = c.leader_polling;
  if (c.retain_bytes != 0) o.retain_bytes = c.retain_bytes;
  o.wal_dir = wal_dir_of(c, -1);
  return o;
}

uint64_t whole_run_retain_bytes(const RunConfig& c) {
  replication::ChannelOptions defaults;
  uint32_t shards = c.shards != 0 ? c.shards : defaults.shards;
  // Record headers are 28 bytes and batch headers 32 (replication/batch_format.h); 40 per
  // record covers both with padding. A quarter of headroom covers uneven shards.
  uint64_t total = expected_payload_bytes(c.workload) + c.workload.records * 40;
  uint64_t per_shard = total / shards;
  return std::max<uint64_t>(defaults.retain_bytes, per_shard + per_shard / 4 + (4u << 20));
}

replication::ChannelOptions follower_options(const RunConfig& c, uint32_t index, uint16_t port) {
  replication::ChannelOptions o;
  o.role = replication::Role::follower;
  o.node_id = "follower-" + std::to_string(index + 1);
  o.listen = transport::Endpoint{"127.0.0.1", port};
  common_options(c, o);
  o.wal_dir = wal_dir_of(c, static_cast<int>(index));
  return o;
}

}  // namespace rdmarepl::kvdemo
