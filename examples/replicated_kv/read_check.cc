#include "read_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "control_socket.h"
#include "flags.h"
#include "rdmarepl/reads/read_client.h"

namespace rdmarepl::kvdemo {

namespace {

transport::TransportKind transport_of(std::string_view name) {
  return name == "verbs" ? transport::TransportKind::verbs : transport::TransportKind::tcp;
}

// Keys spread evenly over the key space, at most `sample` of them.
std::vector<std::string> sample_keys(const WorkloadSpec& spec, uint64_t sample) {
  const uint64_t space = spec.keyspace == 0 ? std::max<uint64_t>(spec.records, 1) : spec.keyspace;
  const uint64_t n = std::min(space, sample);
  std::vector<std::string> keys;
  keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) keys.push_back(key_of(i * space / n, spec.key_size));
  return keys;
}

}  // namespace

Result<std::unique_ptr<ReadServer>> start_read_server(
    replication::ReplicationChannel<KvStore>& channel, KvStore& store) {
  reads::ReadServerOptions o;
  o.listen = transport::Endpoint{"127.0.0.1", 0};
  o.transport = transport_of(channel.transport_name());
  o.node_id = channel.options().node_id + "-reads";
  o.pre_shared_key = channel.options().pre_shared_key;
  return ReadServer::create(o, store, channel);
}

std::string ReadCheck::to_wire() const {
  return fmt::format("read_keys={} read_found={} read_mismatches={} read_replicas={}", keys, found,
                     mismatches, replicas);
}

Result<ReadCheck> ReadCheck::from_wire(std::string_view line) {
  ReadCheck c;
  for (auto [key, out] :
       {std::pair{"read_keys", &c.keys}, std::pair{"read_found", &c.found},
        std::pair{"read_mismatches", &c.mismatches}, std::pair{"read_replicas", &c.replicas}}) {
    auto v = parse_count(field(line, key), key);
    if (!v) return std::move(v).error();
    *out = *v;
  }
  return c;
}

Result<ReadCheck> check_reads(const KvStore& leader_store, const WorkloadSpec& spec,
                              std::string_view endpoints, std::string_view transport,
                              const std::string& pre_shared_key, uint64_t sample) {
  auto replicas = parse_endpoints(endpoints, "read replicas");
  if (!replicas) return std::move(replicas).error();
  const std::vector<std::string> keys = sample_keys(spec, sample);
  std::vector<std::string_view> views(keys.begin(), keys.end());
  ReadCheck check;
  check.keys = keys.size();
  check.replicas = replicas->size();
  // One client per replica, so that every replica answers every key.
  for (const transport::Endpoint& ep : *replicas) {
    reads::ReadClientOptions o;
    o.replicas = {ep};
    o.transport = transport_of(transport);
    o.pre_shared_key = pre_shared_key;
    o.request_timeout = std::chrono::seconds(10);
    auto client = reads::ReadClient::connect(o);
    if (!client) {
      return Error(client.error().code(),
                   "reads from " + ep.to_string() + ": " + client.error().message());
    }
    auto got = (*client)->get(views);
    if (!got) {
      return Error(got.error().code(),
                   "reads from " + ep.to_string() + ": " + got.error().message());
    }
    std::string mine;
    for (size_t i = 0; i < keys.size(); ++i) {
      const reads::ReadResult& r = (*got)[i];
      const bool have = leader_store.get(keys[i], mine);
      const bool found = r.status == reads::ReadStatus::found;
      if (found) ++check.found;
      if (found != have || (found && r.value != mine)) ++check.mismatches;
    }
  }
  return check;
}

}  // namespace rdmarepl::kvdemo
