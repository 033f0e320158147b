#include "roles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "control_socket.h"
#if RDMAREPL_KV_FAILOVER
#include "failover_member.h"
#endif
#include "kv_store.h"
#include "latency.h"
#include "metrics_server.h"
#include "metrics_text.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/replication/channel.h"
#include "read_check.h"
#include "run_config.h"

namespace rdmarepl::kvdemo {

namespace {

using Channel = replication::ReplicationChannel<KvStore>;
using namespace std::chrono_literals;

// Before shutdown every role stops logging: the first process to close its connections
// would otherwise make the others log the (expected) disconnection as an error.
void mute(ControlSocket& ctl) {
  log::set_level(log::Level::off);
  (void)ctl.send_line("muted");
}

// Tickets of one shard commit in seq order, so a FIFO per shard finds every commit by
// looking at its front only.
struct Pending {
  uint64_t seq;
  uint64_t start_ns;
};

class CommitTracker {
 public:
  CommitTracker(Channel& channel, uint32_t shards, size_t expected)
      : channel_(channel), pending_(shards) {
    latency_.reserve(expected);
  }
  void add(replication::Ticket t, uint64_t start_ns) {
    pending_[t.shard].push_back(Pending{t.seq, start_ns});
    ++outstanding_;
  }
  // Records the latency of every write that committed since the last call.
  void drain() {
    if (outstanding_ == 0) return;
    uint64_t now = 0;
    for (uint32_t s = 0; s < pending_.size(); ++s) {
      auto& q = pending_[s];
      while (!q.empty() && channel_.committed(replication::Ticket{s, q.front().seq})) {
        if (now == 0) now = mono_ns();
        latency_.record(now - q.front().start_ns);
        q.pop_front();
        --outstanding_;
      }
    }
  }
  // Waits for every outstanding write; false when one did not commit within `timeout`.
  Status drain_all(std::chrono::milliseconds timeout) {
    auto deadline = Deadline::after(timeout);
    while (outstanding_ != 0) {
      drain();
      if (outstanding_ == 0) break;
      for (uint32_t s = 0; s < pending_.size(); ++s) {
        if (pending_[s].empty()) continue;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining());
        RDMAREPL_TRY(channel_.wait(replication::Ticket{s, pending_[s].front().seq},
                                   std::max(left, std::chrono::milliseconds(1))));
        break;
      }
    }
    return ok_status();
  }
  // Waits until at most `limit` writes are outstanding, oldest first (the oldest outstanding
  // write is at the front of one shard's queue: the one issued first). The channel's wait()
  // seals and sends the open batch at once.
  Status wait_until_at_most(size_t limit, std::chrono::milliseconds timeout) {
    drain();
    while (outstanding_ > limit) {
      uint32_t oldest = 0;
      uint64_t oldest_ns = UINT64_MAX;
      for (uint32_t s = 0; s < pending_.size(); ++s) {
        if (!pending_[s].empty() && pending_[s].front().start_ns < oldest_ns) {
          oldest = s;
          oldest_ns = pending_[s].front().start_ns;
        }
      }
      RDMAREPL_TRY(
          channel_.wait(replication::Ticket{oldest, pending_[oldest].front().seq}, timeout));
      drain();
    }
    return ok_status();
  }
  LatencySummary summarize() { return latency_.summarize(); }

 private:
  Channel& channel_;
  std::vector<std::deque<Pending>> pending_;
  size_t outstanding_ = 0;
  LatencyRecorder latency_;
};

// Drives progress until every follower has all its shards connected, or `limit` passes.
Status wait_connected(Channel& channel, size_t followers, std::chrono::seconds limit) {
  const Deadline deadline = Deadline::after(limit);
  for (;;) {
    (void)channel.progress();
    const auto m = channel.metrics();
    std::string missing;
    for (size_t i = 0; i < followers; ++i)
      if (!m.follower_connected[i])
        missing += fmt::format("{}{}", missing.empty() ? "" : ", ", i + 1);
    if (missing.empty()) return {};
    if (deadline.expired())
      return Error(Errc::timeout,
                   fmt::format("follower(s) {} not connected after {} s; the leader's log says "
                               "why each attempt failed",
                               missing, limit.count()));
    std::this_thread::sleep_for(5ms);
  }
}

int run_leader(const Flags& flags, ControlSocket& ctl) {
  RunConfig config;
  if (auto s = apply_flags(flags, config); !s) return fail(ctl, s.error().message());
  auto peers = parse_endpoints(flags.get("peers"), "--peers");
  if (!peers) return fail(ctl, peers.error().message());

  KvStore store(config.digest_only_store ? KvStore::Mode::kDigestOnly : KvStore::Mode::kFull);
  store.reserve(expected_keys(config.workload));
  auto options = leader_options(config, *peers);
  auto created = Channel::create(options, store);
  if (!created) return fail(ctl, "leader: " + created.error().to_string());
  Channel& channel = **created;
  const uint64_t registrations = channel.metrics().memory_registrations;
  auto served = MetricsServer::start(channel, static_cast<uint16_t>(config.metrics_port));
  if (!served) return fail(ctl, "leader: " + served.error().message());
  // The workload starts once every follower is connected. Connecting is asynchronous; a
  // follower whose first attempts fail (e.g. its accept thread is not yet running on a slow
  // machine) would otherwise connect after the retained window has moved past seq 1, and
  // without a write-ahead log nothing can catch it up.
  if (auto st = wait_connected(channel, peers->size(), 60s); !st)
    return fail(ctl, "leader: " + st.error().message());
  if (!ctl.send_line(fmt::format("ready transport={}", channel.transport_name()))) return 1;

  auto go = ctl.read_line(std::chrono::hours(1));
  if (!go || *go != "go") return 1;

  const uint64_t n = config.workload.records;
  Workload workload(config.workload);
  CommitTracker tracker(channel, channel.options().shards, n);
  uint64_t bytes = 0;
  const bool manual = options.polling == replication::PollingMode::manual;
  // Often enough that acks return ring credit before the window fills, rarely enough that
  // the writes are not slowed by empty polls: each poll is a recv() per follower, which
  // mostly finds nothing. Every 32 records is about twice per 64 KiB batch at 1 KiB values
  // (every 8 cost the leader about 0.25 empty recv() per record).
  constexpr uint64_t kProgressEvery = 32;
  uint64_t start = mono_ns();
  uint64_t last_report = start;
  // Progress every 50 ms, and at every tenth of the run however fast it goes: the parent
  // kills a follower at a fraction of the run (--kill-at) when it sees that fraction here.
  const uint64_t tenth = std::max<uint64_t>(n / 10, 1);
  for (uint64_t i = 0; i < n; ++i) {
    Operation op = workload.next();
    bytes += op.key.size() + op.value.size();
    uint64_t t0 = mono_ns();
    // The leader's own store takes the write first, as a store embedding the channel would.
    replication::WriteResult w;
    if (op.erase) {
      store.erase(op.key);
      w = channel.erase(op.key);
    } else {
      store.put(op.key, op.value);
      w = channel.replicate(op.key, op.value);
    }
    if (!w.ok()) {
      return fail(ctl, fmt::format("leader: write {} of {} failed: {}", i + 1, n,
                                   replication::describe(w.status)));
    }
    tracker.add(w.ticket, t0);
    if (config.outstanding != 0) {
      // Closed loop: the next write is issued once fewer than `outstanding` are uncommitted.
      if (auto s = tracker.wait_until_at_most(config.outstanding - 1, 120s); !s) {
        return fail(ctl, fmt::format("leader: write {} of {} did not commit: {}", i + 1, n,
                                     s.error().to_string()));
      }
    } else {
      // Without a poller thread this loop drives the channel: completions, acks, sends.
      if (manual && (i & (kProgressEvery - 1)) == 0) channel.progress();
      tracker.drain();
    }
    if ((i & 1023) == 0 || i % tenth == 0) {
      uint64_t now = mono_ns();
      if (now - last_report > 50'000'000 || i % tenth == 0) {
        last_report = now;
        if (!ctl.send_line(fmt::format("progress n={}", i))) return 1;
      }
    }
  }
  channel.flush();
  if (auto s = tracker.drain_all(120s); !s) return fail(ctl, "leader: " + s.error().to_string());
  if (auto s = channel.wait_all_acked(120s); !s) {
    return fail(ctl, "leader: not every follower acknowledged: " + s.error().to_string());
  }
  uint64_t elapsed = mono_ns() - start;
  auto latency = tracker.summarize();
  auto m = channel.metrics();
  if (!ctl.send_line(fmt::format(
          "done n={} elapsed_ns={} bytes={} transport={} digest={} created_registrations={} {} {}",
          n, elapsed, bytes, channel.transport_name(), store.digest().to_string(), registrations,
          metrics_to_wire(m), latency.to_wire()))) {
    return 1;
  }
  for (;;) {
    auto line = ctl.read_line(std::chrono::hours(1));
    if (!line || *line == "quit") break;
    if (*line == "digest") (void)ctl.send_line("digest value=" + store.digest().to_string());
    if (*line == "mute") mute(ctl);
    if (line->rfind("readcheck ", 0) == 0) {
      auto c = check_reads(store, config.workload, field(*line, "peers"), channel.transport_name(),
                           config.pre_shared_key, config.read_keys);
      if (!c) return fail(ctl, "leader: " + c.error().message());
      (void)ctl.send_line("readcheck " + c->to_wire());
    }
  }
  channel.close();
  return 0;
}

int run_follower(const Flags& flags, ControlSocket& ctl) {
  RunConfig config;
  if (auto s = apply_flags(flags, config); !s) return fail(ctl, s.error().message());
  auto index = parse_count(flags.get("id", "0"), "--id");
  auto port = parse_count(flags.get("port", "0"), "--port");
  if (!index || !port || *port > 65535) return fail(ctl, "follower: bad --id or --port");

  KvStore store(config.digest_only_store ? KvStore::Mode::kDigestOnly : KvStore::Mode::kFull);
  store.reserve(expected_keys(config.workload));
  auto options =
      follower_options(config, static_cast<uint32_t>(*index), static_cast<uint16_t>(*port));
  auto created = Channel::create(options, store);
  if (!created) return fail(ctl, options.node_id + ": " + created.error().to_string());
  Channel& channel = **created;
  const uint32_t metrics_port =
      config.metrics_port == 0 ? 0 : config.metrics_port + 1 + static_cast<uint32_t>(*index);
  std::unique_ptr<ReadServer> reads;
  if (config.read_keys != 0) {
    auto r = start_read_server(channel, store);
    if (!r) return fail(ctl, options.node_id + ": serving reads: " + r.error().message());
    reads = std::move(*r);
  }
  auto served = MetricsServer::start(channel, static_cast<uint16_t>(metrics_port), reads.get());
  if (!served) return fail(ctl, options.node_id + ": " + served.error().message());
  if (!ctl.send_line(fmt::format("ready port={} read_port={} transport={} registrations={}",
                                 channel.local_endpoint().port,
                                 reads ? reads->local_endpoint().port : 0, channel.transport_name(),
                                 channel.metrics().memory_registrations))) {
    return 1;
  }
  for (;;) {
    auto line = ctl.read_line(std::chrono::hours(24));
    if (!line || *line == "quit") break;  // a closed control socket means the run is over
    if (*line == "mute") mute(ctl);
    if (*line == "digest") {
      auto m = channel.metrics();
      (void)ctl.send_line(
          fmt::format("digest value={} {}", store.digest().to_string(), metrics_to_wire(m)));
    }
  }
  if (reads) reads->close();
  channel.close();
  return 0;
}

}  // namespace

std::optional<int> run_role_if_requested(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--role") != 0) return std::nullopt;
  ControlSocket ctl(kControlFd);
  // Connection notices would tear through the coordinator's progress bar; warnings and
  // errors still show. RDMAREPL_LOG_LEVEL overrides.
  if (std::getenv("RDMAREPL_LOG_LEVEL") == nullptr) log::set_level(log::Level::warn);
  auto flags = Flags::parse(argc, argv, {});
  if (!flags) return fail(ctl, flags.error().message());
  std::string role = flags->get("role");
  if (role == "leader") return run_leader(*flags, ctl);
  if (role == "follower") return run_follower(*flags, ctl);
#if RDMAREPL_KV_FAILOVER
  if (role == "member" && flags->has("plain")) return run_plain_member(*flags, ctl);
  if (role == "member") return run_member(*flags, ctl);
#endif
  return fail(ctl, "unknown --role '" + role + "'");
}

}  // namespace rdmarepl::kvdemo
