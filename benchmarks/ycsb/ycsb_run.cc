// One YCSB run (ycsb_run.h): load, then client threads until operation_count.
#include "ycsb_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "client_ops.h"
#include "rdmarepl/core/clock.h"
#include "value_codec.h"

namespace rdmarepl::ycsb {

void client_thread(Shared& s, uint32_t t, reads::ReadClient& client) {
  std::mt19937_64 rng(s.o.seed * 7919 + t);
  std::uniform_real_distribution<double> pick(0, 1);
  OwnWrites mine;
  const double per_thread =
      s.o.target_ops > 0 ? static_cast<double>(s.o.target_ops) / s.o.threads : 0;
  const uint64_t t0 = mono_ns();
  uint64_t done = 0;
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
      const bool ok = own_write(s, mine, s.chooser.next(rng, s.inserted.load()));
      s.update.record(mono_ns() - start);
      if (!ok) ++s.update_fail;
    } else if (p < m.read + m.update + m.insert) {
      insert_one(s, mine);
    } else {
      read_modify_write(s, client, mine, s.chooser.next(rng, s.inserted.load()));
    }
  }
}

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
  // An event-loop thread drives a client of its own (its callbacks run where it polls).
  const uint32_t client_count = o.inflight > 1 ? o.threads : std::min(o.clients, o.threads);
  std::vector<std::unique_ptr<reads::ReadClient>> clients;
  for (uint32_t t = 0; t < client_count; ++t) {
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
    threads.emplace_back([&, t] {
      if (o.inflight > 1)
        event_loop_thread(s, t, *clients[t]);
      else
        client_thread(s, t, *clients[t % clients.size()]);
    });
  for (auto& t : threads) t.join();
  RunResult r;
  r.seconds = static_cast<double>(mono_ns() - t0) * 1e-9;
  r.cpu_seconds_local = process_cpu_seconds() - cpu0;
  auto remote1 = nodes.remote_cpu_seconds();
  if (!remote1.ok()) return std::move(remote1).error();
  r.cpu_seconds_remote = *remote1 - *remote0;
  r.cpu_seconds = r.cpu_seconds_local + r.cpu_seconds_remote;
  r.processes = nodes.remote() ? 1 + static_cast<uint32_t>(o.read_peers.size()) : 1;
  auto put = [&](const char* name, LatencyLog& log, uint64_t failed) {
    OpStats st;
    st.latency = log.summary();
    st.operations = st.latency.count;
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
