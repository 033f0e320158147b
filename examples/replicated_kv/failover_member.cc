#include "failover_member.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "burst.h"
#include "child_process.h"
#include "failover_run.h"
#include "kv_store.h"
#include "rdmarepl/core/enum_text.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/failover/replica_node.h"

namespace rdmarepl::kvdemo {

namespace {

using namespace std::chrono_literals;
using Node = failover::ReplicaNode<KvStore>;

// "n0=127.0.0.1:4000,n1=127.0.0.1:4001" -> members.
Result<std::vector<failover::Member>> parse_members(const std::string& text) {
  std::vector<failover::Member> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Error(Errc::invalid_argument, "--members item '" + item + "' is not id=host:port");
    auto ep = parse_endpoints(item.substr(eq + 1), "--members");
    if (!ep) return std::move(ep).error();
    out.push_back({item.substr(0, eq), ep->front()});
    pos = end + 1;
  }
  return out;
}

std::string role_line(const Node& node) {
  const auto l = node.leader();
  return fmt::format("role name={} epoch={} leader={} last={}", failover::to_string(node.role()),
                     node.epoch(), l.id.empty() ? "-" : l.id, node.last_seq());
}

// Writes first..first+count-1 (and the register writes among them), then waits for each in
// order: the acknowledged ones are a prefix (one shard commits in seq order). `count` in the
// answer: the writes whose every record was acknowledged.
std::string write_range(Node& node, uint64_t first, uint64_t count, uint32_t value_size) {
  struct Pending {
    failover::NodeTicket ticket;
    uint64_t index;
  };
  std::vector<Pending> pending;
  pending.reserve(count + count / 2);
  std::string why, reg;
  uint64_t issued = first;  // writes before it were issued whole
  for (; issued < first + count; ++issued) {
    auto t = node.put(failover_key(issued), failover_value(issued, value_size));
    if (t && failover_register(issued, reg)) {
      pending.push_back({*t, issued});
      t = node.put(reg, std::to_string(issued));
    }
    if (!t) {
      why = t.error().message();
      break;
    }
    pending.push_back({*t, issued});
  }
  node.flush();
  uint64_t acked_end = issued, epoch = 0;
  for (const auto& p : pending) {
    if (auto st = node.wait(p.ticket, 3s); !st) {
      why = st.error().message();
      acked_end = p.index;
      break;
    }
    epoch = p.ticket.epoch;
  }
  const uint64_t acked = acked_end - first;
  std::string line = fmt::format("acked first={} count={} epoch={}", first, acked, epoch);
  if (acked < count) line += " message=" + one_line(why);
  return line;
}

// The register keys as this leader's store holds them, confirmed by a write replicated
// after the read: once that write is committed in the same epoch, no other leadership can
// have written in between (it needs a majority that fenced this one first), so the values
// were current at some instant between the request and the answer.
std::string read_registers(Node& node, const KvStore& store) {
  const uint64_t epoch = node.epoch();
  if (node.role() != failover::NodeRole::leader) return "read ok=0 message=not_the_leader";
  std::string values, got;
  for (uint32_t r = 0; r < kFailoverRegisters; ++r) {
    if (r != 0) values += ',';
    values += store.get(failover_register_key(r), got) ? got : "-";
  }
  auto t = node.put("barrier", std::to_string(epoch));
  if (!t || t->epoch != epoch) return "read ok=0 message=not_the_leader";
  node.flush();
  if (auto st = node.wait(*t, 3s); !st)
    return "read ok=0 message=" + one_line(st.error().message());
  return fmt::format("read ok=1 epoch={} values={}", epoch, values);
}

// Of writes 0..count-1, how many the store lacks or holds with another value, and the
// first of them ("-" when none).
std::string count_missing(const KvStore& store, uint64_t count, uint32_t value_size) {
  uint64_t missing = 0;
  std::string got, first = "-";
  for (uint64_t i = 0; i < count; ++i)
    if (!store.get(failover_key(i), got) || got != failover_value(i, value_size)) {
      if (missing++ == 0) first = std::to_string(i);
    }
  return fmt::format("check missing={} first={}", missing, first);
}

}  // namespace

Result<failover::NodeOptions> member_options(const Flags& f) {
  failover::NodeOptions o;
  o.group = "kv";
  o.id = f.get("id");
  auto members = parse_members(f.get("members"));
  if (!members) return std::move(members).error();
  o.members = std::move(*members);
  o.dir = f.get("dir");
  o.etcd.endpoints.clear();
  const std::string etcd = f.get("etcd");
  for (size_t pos = 0; pos <= etcd.size();) {
    const size_t end = std::min(etcd.find(',', pos), etcd.size());
    o.etcd.endpoints.push_back(etcd.substr(pos, end - pos));
    pos = end + 1;
  }
  auto lease = f.get_u64("lease-ms", 1000);
  if (!lease) return std::move(lease).error();
  o.lease_ttl = std::chrono::milliseconds(*lease);
  auto suspect = f.get_u64("suspect-ms", 200);
  if (!suspect) return std::move(suspect).error();
  o.suspect_after = std::chrono::milliseconds(*suspect);
  auto ack = parse_enum<replication::AckMode>(f.get("ack", "quorum"), "--ack");
  if (!ack) return std::move(ack).error();
  auto value_size = f.get_u64("value-size", 1024);
  if (!value_size) return std::move(value_size).error();
  auto& c = o.channel;
  c.transport = replication::TransportKind::tcp;
  c.shards = 1;
  c.ack_mode = *ack;
  // Three members share two cores on a small machine: no poller spins.
  c.polling = replication::PollingMode::blocking;
  c.max_value_bytes = std::max<uint64_t>(*value_size, 1024);
  c.ring_bytes = 4 << 20;
  c.retain_bytes = 16 << 20;
  c.zero_copy_pool_bytes = 0;
  c.reconnect_interval = 10ms;
  c.reconnect_max_interval = 100ms;
  if (auto st = failover::validate(o); !st) return std::move(st).error();
  return o;
}

int run_member(const Flags& flags, ControlSocket& ctl) {
  // While a group elects, members refuse connections from a leader they were not yet told
  // of, and the leader retries: expected, and loud at warn. RDMAREPL_LOG_LEVEL overrides.
  if (std::getenv("RDMAREPL_LOG_LEVEL") == nullptr) log::set_level(log::Level::error);
  auto options = member_options(flags);
  if (!options) return fail(ctl, "member: " + options.error().message());
  const auto value_size = static_cast<uint32_t>(flags.get_u64("value-size", 1024).value());
  KvStore store;
  auto created = Node::create(*options, store);
  if (!created) return fail(ctl, options->id + ": " + created.error().to_string());
  Node& node = **created;
  if (!ctl.send_line("ready")) return 1;
  for (;;) {
    auto line = ctl.read_line(std::chrono::hours(24));
    if (!line || *line == "quit") break;  // a closed control socket: the run is over
    if (*line == "role") {
      (void)ctl.send_line(role_line(node));
    } else if (line->rfind("write ", 0) == 0) {
      auto first = parse_count(field(*line, "first"), "first");
      auto count = parse_count(field(*line, "count"), "count");
      if (!first || !count) return fail(ctl, "member: bad write line '" + *line + "'");
      (void)ctl.send_line(write_range(node, *first, *count, value_size));
    } else if (line->rfind("check ", 0) == 0) {
      auto count = parse_count(field(*line, "count"), "count");
      if (!count) return fail(ctl, "member: bad check line '" + *line + "'");
      (void)ctl.send_line(count_missing(store, *count, value_size));
    } else if (line->rfind("burst ", 0) == 0) {
      auto first = parse_count(field(*line, "first"), "first");
      auto count = parse_count(field(*line, "count"), "count");
      if (!first || !count) return fail(ctl, "member: bad burst line '" + *line + "'");
      (void)ctl.send_line(timed_burst(
          *first, *count,
          [&](uint64_t i) { return node.put(failover_key(i), failover_value(i, value_size)); },
          [&](const failover::NodeTicket& t) {
            node.flush();
            return node.wait(t, 60s);
          }));
    } else if (*line == "cpu") {
      (void)ctl.send_line(fmt::format("cpu seconds={:.6f}", self_cpu_seconds()));
    } else if (*line == "read") {
      (void)ctl.send_line(read_registers(node, store));
    } else if (*line == "digest") {
      (void)ctl.send_line(
          fmt::format("digest value={} last={}", store.digest().to_string(), node.last_seq()));
    }
  }
  node.stop(/*resign=*/true);
  return 0;
}

}  // namespace rdmarepl::kvdemo
