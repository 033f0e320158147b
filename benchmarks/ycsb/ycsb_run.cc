// One YCSB run (ycsb_run.h): load, then client threads until operation_count.
#include "ycsb_run.h"

#include <fmt/format.h>

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

#include "nodes.h"
#include "rdmarepl/core/clock.h"
#include "value_codec.h"

namespace rdmarepl::ycsb {
namespace {

// What the client threads share.
struct Shared {
  Shared(const RunOptions& opts, Nodes& n)
      : o(opts),
        cluster(n),
        chooser(opts.mix.distribution, opts.record_count),
        capacity(opts.record_count + opts.operation_count),
        versions(std::make_unique<std::atomic<uint64_t>[]>(capacity)) {}
  const RunOptions& o;
  Nodes& cluster;
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
  auto cluster = start_nodes(o);
  if (!cluster.ok()) return std::move(cluster).error();
  Nodes& nodes = **cluster;
  Shared s(o, nodes);
  uint64_t load_failures = 0;
  for (uint64_t i = 0; i < o.record_count; ++i)
    if (write(s, i).seq == 0) ++load_failures;
  if (load_failures > 0)
    return Error(Errc::timeout,
                 fmt::format("load: {} of {} writes were not accepted by the leader (stalled: a "
                             "follower stopped acknowledging); see the leader's log",
                             load_failures, o.record_count));
  s.inserted = o.record_count;
  RDMAREPL_TRY(nodes.leader->wait_all_acked(std::chrono::seconds(120)));
  // Clients connect (and register their buffers) before the clock starts.
  std::vector<std::unique_ptr<reads::ReadClient>> clients;
  for (uint32_t t = 0; t < std::min(o.clients, o.threads); ++t) {
    auto c = reads::ReadClient::connect(nodes.client_options);
    if (!c.ok()) return std::move(c).error();
    clients.push_back(std::move(*c));
  }
  auto remote0 = nodes.remote_cpu_seconds();
  if (!remote0.ok()) return std::move(remote0).error();
  const double cpu0 = process_cpu_seconds();
  const uint64_t t0 = mono_ns();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] { client_thread(s, t, *clients[t % clients.size()]); });
  for (auto& t : threads) t.join();
  RunResult r;
  r.seconds = static_cast<double>(mono_ns() - t0) * 1e-9;
  r.cpu_seconds_local = process_cpu_seconds() - cpu0;
  auto remote1 = nodes.remote_cpu_seconds();
  if (!remote1.ok()) return std::move(remote1).error();
  r.cpu_seconds_remote = *remote1 - *remote0;
  r.cpu_seconds = r.cpu_seconds_local + r.cpu_seconds_remote;
  r.processes = nodes.remote() ? 1 + static_cast<uint32_t>(o.read_peers.size()) : 1;
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
  r.leader_knobs = nodes.leader->knobs();
  r.verified_reads = s.verified;
  r.bad_values = s.bad;
  r.stale_reads = s.stale;
  nodes.close();
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
