// One YCSB run (ycsb_run.h): load, then client threads until operation_count.
#include "ycsb_run.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/rdmarepl.h"
#include "rdmarepl/reads/read_client.h"
#include "rdmarepl/reads/read_server.h"
#include "value_codec.h"

namespace rdmarepl::ycsb {
namespace {

// A store whose get() may run while apply() runs.
struct Store {
  mutable std::shared_mutex mu;
  std::unordered_map<std::string, std::string> data;
  void apply(const replication::Record& r) {
    std::unique_lock lock(mu);
    if (r.op == replication::Op::put)
      data[std::string(r.key)].assign(r.value);
    else
      data.erase(std::string(r.key));
  }
  bool get(std::string_view key, std::string& out) const {
    std::shared_lock lock(mu);
    auto it = data.find(std::string(key));
    if (it == data.end()) return false;
    out.assign(it->second);
    return true;
  }
};
using Channel = replication::ReplicationChannel<Store>;
using Server = reads::ReadServer<Store>;

std::string key_of(uint64_t i) {
  return fmt::format("user{}", fnv64(i));
}

double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Cluster {
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<Channel>> followers;
  std::vector<std::unique_ptr<Server>> servers;
  Store leader_store;
  std::unique_ptr<Channel> leader;
  reads::ReadClientOptions client_options;
};

replication::ChannelOptions node_options(const RunOptions& o) {
  replication::ChannelOptions c;
  c.transport = o.transport;
  c.shards = o.shards;
  c.max_value_bytes = std::max<uint32_t>(o.value_bytes, 1024) + 64;
  c.ring_bytes = 8 << 20;
  c.retain_bytes = 32 << 20;
  c.polling = o.polling;
  c.poll_interval = std::chrono::microseconds(20);
  c.flush_delay = std::chrono::microseconds(50);
  return c;
}

Result<std::unique_ptr<Cluster>> start(const RunOptions& o) {
  auto c = std::make_unique<Cluster>();
  replication::ChannelOptions lo = node_options(o);
  for (uint32_t i = 0; i < o.followers; ++i) {
    c->stores.push_back(std::make_unique<Store>());
    replication::ChannelOptions fo = node_options(o);
    fo.role = replication::Role::follower;
    fo.listen = {"127.0.0.1", 0};
    auto f = Channel::create(fo, *c->stores.back());
    if (!f.ok()) return std::move(f).error();
    c->followers.push_back(std::move(*f));
    lo.peers.push_back(c->followers.back()->local_endpoint());
    reads::ReadServerOptions so;
    so.transport = o.transport;
    so.listen = {"127.0.0.1", 0};
    auto s = Server::create(so, *c->stores.back(), *c->followers.back());
    if (!s.ok()) return std::move(s).error();
    c->client_options.replicas.push_back((*s)->local_endpoint());
    c->servers.push_back(std::move(*s));
  }
  auto l = Channel::create(lo, c->leader_store);
  if (!l.ok()) return std::move(l).error();
  c->leader = std::move(*l);
  c->client_options.transport = o.transport;
  return c;
}

// What the client threads share.
struct Shared {
  Shared(const RunOptions& opts, Cluster& c)
      : o(opts),
        cluster(c),
        chooser(opts.mix.distribution, opts.record_count),
        capacity(opts.record_count + opts.operation_count),
        versions(std::make_unique<std::atomic<uint64_t>[]>(capacity)) {}
  const RunOptions& o;
  Cluster& cluster;
  KeyChooser chooser;
  uint64_t capacity;
  std::unique_ptr<std::atomic<uint64_t>[]> versions;
  std::array<std::mutex, 1024> stripes;
  std::mutex insert_mu;
  std::atomic<uint64_t> inserted{0};
  std::atomic<uint64_t> issued{0};
  metrics::Histogram read, update, insert, rmw;
  std::atomic<uint64_t> read_fail{0}, update_fail{0}, insert_fail{0}, rmw_fail{0};
  std::atomic<uint64_t> verified{0}, bad{0}, stale{0};
};

// Writes version++ of record `i` through the leader; the key's stripe keeps versions in
// seq order. Returns the ticket (shard 0, seq 0 on failure).
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

bool read(Shared& s, reads::ReadClient& client, uint64_t i,
          const std::unordered_map<uint64_t, std::pair<replication::Ticket, uint64_t>>& mine) {
  const std::string key = key_of(i);
  reads::Consistency c = reads::Consistency::any();
  auto own = mine.find(i);
  if (s.o.consistency == reads::Consistency::Kind::at_least && own != mine.end())
    c = reads::Consistency::at_least(own->second.first, s.o.at_least_wait);
  if (s.o.consistency == reads::Consistency::Kind::leader) c = reads::Consistency::leader();
  auto r = client.get(key, c);
  if (!r.ok() || r->status != reads::ReadStatus::found) return false;
  auto version = check_value(key, r->value);
  if (!version) {
    ++s.bad;
    return false;
  }
  ++s.verified;
  if (c.kind == reads::Consistency::Kind::at_least && *version < own->second.second) ++s.stale;
  return true;
}

void client_thread(Shared& s, uint32_t t, reads::ReadClient& client) {
  std::mt19937_64 rng(s.o.seed * 7919 + t);
  std::uniform_real_distribution<double> pick(0, 1);
  std::unordered_map<uint64_t, std::pair<replication::Ticket, uint64_t>> mine;
  const double per_thread =
      s.o.target_ops > 0 ? static_cast<double>(s.o.target_ops) / s.o.threads : 0;
  const uint64_t t0 = mono_ns();
  uint64_t done = 0;
  auto own_write = [&](uint64_t i) {
    const auto ticket = write(s, i);
    mine[i] = {ticket, s.versions[i].load()};
    return committed(s, ticket);
  };
  while (s.issued.fetch_add(1) < s.o.operation_count) {
    if (per_thread > 0) {  // open the next operation on schedule
      const auto due = t0 + static_cast<uint64_t>(static_cast<double>(done) * 1e9 / per_thread);
      while (mono_ns() < due) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    ++done;
    const double p = pick(rng);
    const uint64_t start = mono_ns();
    const Mix& m = s.o.mix;
    if (p < m.read) {
      const bool ok = read(s, client, s.chooser.next(rng, s.inserted.load()), mine);
      s.read.record(mono_ns() - start);
      if (!ok) ++s.read_fail;
    } else if (p < m.read + m.update) {
      const bool ok = own_write(s.chooser.next(rng, s.inserted.load()));
      s.update.record(mono_ns() - start);
      if (!ok) ++s.update_fail;
    } else if (p < m.read + m.update + m.insert) {
      // One insert at a time: readers choose among records 0..inserted-1, all written.
      std::lock_guard lock(s.insert_mu);
      const uint64_t i = s.inserted.load();
      const bool ok = i < s.capacity && own_write(i);
      if (ok) s.inserted.fetch_add(1);
      s.insert.record(mono_ns() - start);
      if (!ok) ++s.insert_fail;
    } else {
      const uint64_t i = s.chooser.next(rng, s.inserted.load());
      const bool ok = read(s, client, i, mine) && own_write(i);
      s.rmw.record(mono_ns() - start);
      if (!ok) ++s.rmw_fail;
    }
  }
}

}  // namespace

Result<RunResult> run(const RunOptions& o) {
  auto cluster = start(o);
  if (!cluster.ok()) return std::move(cluster).error();
  Shared s(o, **cluster);
  for (uint64_t i = 0; i < o.record_count; ++i) (void)write(s, i);
  s.inserted = o.record_count;
  RDMAREPL_TRY((*cluster)->leader->wait_all_acked(std::chrono::seconds(120)));
  // Clients connect (and register their buffers) before the clock starts.
  std::vector<std::unique_ptr<reads::ReadClient>> clients;
  for (uint32_t t = 0; t < std::min(o.clients, o.threads); ++t) {
    auto c = reads::ReadClient::connect((*cluster)->client_options);
    if (!c.ok()) return std::move(c).error();
    clients.push_back(std::move(*c));
  }
  const double cpu0 = cpu_now();
  const uint64_t t0 = mono_ns();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] { client_thread(s, t, *clients[t % clients.size()]); });
  for (auto& t : threads) t.join();
  RunResult r;
  r.seconds = static_cast<double>(mono_ns() - t0) * 1e-9;
  r.cpu_seconds = cpu_now() - cpu0;
  auto put = [&](const char* name, const metrics::Histogram& h, uint64_t failed) {
    OpStats st;
    st.latency_ns = h.snapshot();
    st.operations = st.latency_ns.count;
    st.failed = failed;
    if (st.operations > 0) r.ops[name] = st;
  };
  put("READ", s.read, s.read_fail);
  put("UPDATE", s.update, s.update_fail);
  put("INSERT", s.insert, s.insert_fail);
  put("READ-MODIFY-WRITE", s.rmw, s.rmw_fail);
  uint64_t total = 0;
  for (const auto& [_, st] : r.ops) total += st.operations;
  r.throughput = static_cast<double>(total) / r.seconds;
  r.verified_reads = s.verified;
  r.bad_values = s.bad;
  r.stale_reads = s.stale;
  for (auto& srv : (*cluster)->servers) srv->close();
  return r;
}

bool core_workload(char letter, Mix& out) {
  out = Mix{};
  out.name = letter;
  switch (letter) {
    case 'A':
      out.read = 0.5, out.update = 0.5;
      return true;
    case 'B':
      out.read = 0.95, out.update = 0.05;
      return true;
    case 'C':
      out.read = 1.0;
      return true;
    case 'D':
      out.read = 0.95, out.insert = 0.05, out.distribution = Distribution::latest;
      return true;
    case 'F':
      out.read = 0.5, out.read_modify_write = 0.5;
      return true;
    default:
      return false;
  }
}

}  // namespace rdmarepl::ycsb
