// The operations of the client threads (client_ops.h).
#include "client_ops.h"

#include "rdmarepl/core/clock.h"
#include "value_codec.h"

namespace rdmarepl::ycsb {

replication::Ticket write(Shared& s, uint64_t i) {
  const std::string key = key_of(i);
  std::lock_guard lock(s.stripes[i % s.stripes.size()]);
  const uint64_t version = ++s.versions[i];
  const std::string value = make_value(key, version, s.o.value_bytes);
  {
    std::unique_lock store_lock(s.cluster.leader_store.mu);
    s.cluster.leader_store.data[key] = value;
  }
  auto w = s.cluster.leader->replicate(key, value);
  return w.ok() ? w.ticket : replication::Ticket{};
}

bool committed(Shared& s, replication::Ticket t) {
  return t.seq != 0 && s.cluster.leader->wait(t, std::chrono::seconds(10)).ok();
}

reads::Consistency consistency_for(const Shared& s, uint64_t i, const OwnWrites& mine,
                                   uint64_t& own_version) {
  own_version = 0;
  auto own = mine.find(i);
  if (s.o.consistency == reads::Consistency::Kind::at_least && own != mine.end()) {
    own_version = own->second.second;
    return reads::Consistency::at_least(own->second.first, s.o.at_least_wait);
  }
  if (s.o.consistency == reads::Consistency::Kind::leader) return reads::Consistency::leader();
  return reads::Consistency::any();
}

bool check_read(Shared& s, const std::string& key, const Result<reads::ReadResult>& r,
                const reads::Consistency& c, uint64_t own_version) {
  if (!r.ok() || r->status != reads::ReadStatus::found) return false;
  auto version = check_value(key, r->value);
  if (!version) {
    ++s.bad;
    return false;
  }
  ++s.verified;
  if (c.kind == reads::Consistency::Kind::at_least && *version < own_version) ++s.stale;
  return true;
}

bool read(Shared& s, reads::ReadClient& client, uint64_t i, const OwnWrites& mine) {
  const std::string key = key_of(i);
  uint64_t own_version = 0;
  const reads::Consistency c = consistency_for(s, i, mine, own_version);
  return check_read(s, key, client.get(key, c), c, own_version);
}

bool own_write(Shared& s, OwnWrites& mine, uint64_t i) {
  const auto ticket = write(s, i);
  mine[i] = {ticket, s.versions[i].load()};
  return committed(s, ticket);
}

void insert_one(Shared& s, OwnWrites& mine) {
  const uint64_t start = mono_ns();
  std::lock_guard lock(s.insert_mu);
  const uint64_t i = s.inserted.load();
  const bool ok = i < s.capacity && own_write(s, mine, i);
  if (ok) s.inserted.fetch_add(1);
  s.insert.record(mono_ns() - start);
  if (!ok) ++s.insert_fail;
}

void read_modify_write(Shared& s, reads::ReadClient& client, OwnWrites& mine, uint64_t i) {
  const uint64_t start = mono_ns();
  const bool ok = read(s, client, i, mine) && own_write(s, mine, i);
  s.rmw.record(mono_ns() - start);
  if (!ok) ++s.rmw_fail;
}

}  // namespace rdmarepl::ycsb
