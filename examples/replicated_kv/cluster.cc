#include "cluster.h"

#include <fmt/format.h>

#include <thread>

#include "child_process.h"
#include "metrics_text.h"
#include "progress.h"
#include "rdmarepl/core/clock.h"

namespace rdmarepl::kvdemo {

namespace {

using namespace std::chrono_literals;

// The next line of `child`, which must start with `prefix`. A role that failed answers
// "error message=..." instead; that (or a closed socket) becomes an Error naming the role.
Result<std::string> expect(ChildProcess& child, std::string_view prefix,
                           std::chrono::milliseconds timeout) {
  auto line = child.control().read_line(timeout);
  if (!line) {
    return Error(line.error().code(), child.name() + ": " + line.error().message());
  }
  if (line->rfind("error ", 0) == 0) {
    return Error(Errc::io_error, child.name() + " failed: " + error_text(*line));
  }
  if (line->rfind(prefix, 0) != 0) {
    return Error(Errc::protocol_error,
                 child.name() + " sent '" + *line + "', expected '" + std::string(prefix) + "...'");
  }
  return line;
}

// Starts follower `index` listening on `port` (0: any); its ports come back in `port_out`
// and (0 when it serves no reads) `read_port_out`, the registrations of its channel after
// create() in `registrations_out`.
Result<ChildProcess> start_follower(const RunConfig& config, uint32_t index, uint16_t port,
                                    uint16_t& port_out, uint16_t& read_port_out,
                                    uint64_t& registrations_out) {
  auto args = to_args(config);
  args.insert(args.begin(), {"--role", "follower", "--id", std::to_string(index), "--port",
                             std::to_string(port)});
  auto child = ChildProcess::spawn("follower-" + std::to_string(index + 1), args);
  if (!child) return child;
  // Starting takes seconds; a slow machine (a guest under TCG beside other work) may take
  // longer, so the run's own timeout bounds it.
  auto line = child->control().read_line(config.timeout);
  if (!line) return Error(line.error().code(), child->name() + ": " + line.error().message());
  if (line->rfind("ready ", 0) != 0) {
    return Error(Errc::io_error, child->name() + " failed to start: " + error_text(*line));
  }
  auto p = parse_count(field(*line, "port"), "port");
  if (!p || *p == 0 || *p > 65535) {
    return Error(Errc::protocol_error, child->name() + " reported no port: '" + *line + "'");
  }
  port_out = static_cast<uint16_t>(*p);
  auto rp = parse_count(field(*line, "read_port"), "read_port");
  if (!rp || *rp > 65535 || (config.read_keys != 0 && *rp == 0)) {
    return Error(Errc::protocol_error, child->name() + " reported no read port: '" + *line + "'");
  }
  read_port_out = static_cast<uint16_t>(*rp);
  auto regs = parse_count(field(*line, "registrations"), "registrations");
  registrations_out = regs ? *regs : 0;
  return child;
}

// Has the leader read keys back from every follower's read server (read_check.h).
Result<ReadCheck> check_follower_reads(ChildProcess& leader, const std::vector<uint16_t>& ports) {
  std::string peers;
  for (uint16_t p : ports) peers += fmt::format("{}127.0.0.1:{}", peers.empty() ? "" : ",", p);
  RDMAREPL_TRY(leader.control().send_line("readcheck peers=" + peers));
  auto line = expect(leader, "readcheck ", 120s);
  if (!line) return std::move(line).error();
  return ReadCheck::from_wire(*line);
}

}  // namespace

Result<RunResult> run_cluster(const RunConfig& config) {
  RunResult result;
  const uint64_t n = config.workload.records;
  auto deadline = Deadline::after(config.timeout);
  double self_cpu_start = self_cpu_seconds();
  double reaped_cpu = 0;  // CPU of role processes that were killed part way

  std::vector<ChildProcess> followers;
  std::vector<uint16_t> ports;
  std::vector<uint16_t> read_ports(config.followers, 0);
  std::vector<uint64_t> follower_regs(config.followers, 0);
  for (uint32_t i = 0; i < config.followers; ++i) {
    uint16_t port = 0;
    auto f = start_follower(config, i, 0, port, read_ports[i], follower_regs[i]);
    if (!f) return std::move(f).error();
    followers.push_back(std::move(*f));
    ports.push_back(port);
  }

  std::string peers;
  for (uint16_t p : ports) {
    if (!peers.empty()) peers.push_back(',');
    peers += fmt::format("127.0.0.1:{}", p);
  }
  auto args = to_args(config);
  args.insert(args.begin(), {"--role", "leader", "--peers", peers});
  auto spawned = ChildProcess::spawn("leader", args);
  if (!spawned) return std::move(spawned).error();
  ChildProcess leader = std::move(*spawned);
  {
    auto ready = leader.control().read_line(config.timeout);
    if (!ready) return Error(ready.error().code(), "leader: " + ready.error().message());
    if (ready->rfind("ready ", 0) != 0) {
      return Error(Errc::io_error, "leader failed to start: " + error_text(*ready));
    }
    result.transport = field(*ready, "transport");
  }
  RDMAREPL_TRY(leader.control().send_line("go"));

  Progress progress("replicating", n, config.progress);
  const uint64_t kill_at = config.kill_at > 0 ? static_cast<uint64_t>(config.kill_at * n) : 0;
  const uint64_t restart_at = static_cast<uint64_t>(config.restart_at * static_cast<double>(n));
  uint64_t killed_ns = 0;
  bool restarted = false;
  std::string done;
  uint64_t written = 0;
  for (;;) {
    if (deadline.expired()) {
      return Error(Errc::timeout,
                   fmt::format("the run did not finish within {} s ({} of {} "
                               "records written); raise --timeout or lower --records",
                               config.timeout.count(), written, n));
    }
    // Restart the killed follower once enough was written while it was away (or a second
    // passed: near the end of a small run the writes may already be finished).
    if (killed_ns != 0 && !restarted &&
        (written >= restart_at || mono_ns() - killed_ns > 1'000'000'000)) {
      uint16_t port = 0;
      auto f = start_follower(config, 0, ports[0], port, read_ports[0], follower_regs[0]);
      if (!f) return Error(f.error().code(), "restarting follower-1: " + f.error().message());
      followers[0] = std::move(*f);
      restarted = true;
      progress.update(written, "follower-1 restarted (empty store), catching up");
    }
    auto line = leader.control().read_line(100ms);
    if (!line) {
      if (line.error().is(Errc::timeout)) continue;
      return Error(line.error().code(), "leader: " + line.error().message());
    }
    if (line->rfind("error ", 0) == 0) {
      return Error(Errc::io_error, "leader failed: " + error_text(*line));
    }
    if (line->rfind("done ", 0) == 0) {
      done = *line;
      break;
    }
    if (line->rfind("progress ", 0) == 0) {
      written = parse_count(field(*line, "n"), "n").value();
      if (kill_at != 0 && killed_ns == 0 && written >= kill_at) {
        followers[0].kill_and_reap();
        reaped_cpu += followers[0].cpu_seconds();
        killed_ns = mono_ns();
        result.follower_killed = true;
        progress.update(written, "follower-1 killed (SIGKILL)");
      } else {
        progress.update(written);
      }
    }
  }
  // The leader's "done" waits for every follower's acknowledgement, the restarted one's
  // included, so this only triggers if that contract is broken.
  if (killed_ns != 0 && !restarted) {
    return Error(Errc::invalid_argument,
                 "the leader finished before the killed follower was restarted; run more records");
  }
  progress.update(n);
  progress.finish();

  result.records = n;
  result.payload_bytes = parse_count(field(done, "bytes"), "bytes").value();
  result.seconds = static_cast<double>(parse_count(field(done, "elapsed_ns"), "ns").value()) * 1e-9;
  result.ops_per_sec = static_cast<double>(n) / result.seconds;
  result.mb_per_sec = static_cast<double>(result.payload_bytes) / result.seconds / 1e6;
  auto leader_metrics = metrics_from_wire(done);
  if (!leader_metrics)
    return Error(Errc::protocol_error, "the leader's done line lacks its metrics (" +
                                           leader_metrics.error().message() + "): '" + done + "'");
  result.leader_metrics = *leader_metrics;
  auto created_regs = parse_count(field(done, "created_registrations"), "registrations");
  result.registrations.push_back(NodeRegistrations{"leader", created_regs ? *created_regs : 0,
                                                   leader_metrics->memory_registrations});
  LatencySummary::from_wire(done, result.latency);
  Digest leader_digest;
  Digest::parse(field(done, "digest"), leader_digest);
  result.digests.push_back(NodeDigest{"leader", leader_digest});

  result.verified = true;
  for (auto& f : followers) {
    RDMAREPL_TRY(f.control().send_line("digest"));
    auto line = expect(f, "digest ", 120s);
    if (!line) return std::move(line).error();
    Digest d;
    if (!Digest::parse(field(*line, "value"), d)) {
      return Error(Errc::protocol_error, f.name() + " sent a bad digest line '" + *line + "'");
    }
    result.digests.push_back(NodeDigest{f.name(), d});
    const size_t i = result.registrations.size() - 1;
    auto m = metrics_from_wire(*line);
    result.registrations.push_back(NodeRegistrations{
        f.name(), follower_regs[i], m ? m->memory_registrations : follower_regs[i]});
    if (!(d == leader_digest)) result.verified = false;
  }

  if (config.read_keys != 0) {
    auto reads = check_follower_reads(leader, read_ports);
    if (!reads) return std::move(reads).error();
    result.reads = *reads;
    if (reads->mismatches != 0) result.verified = false;
  }

  // Every role stays up (serving its metrics) for --linger before it is stopped.
  if (config.linger.count() > 0) std::this_thread::sleep_for(config.linger);

  // Mute every role before any of them closes a connection, then stop them.
  std::vector<ChildProcess*> roles{&leader};
  for (auto& f : followers) roles.push_back(&f);
  for (auto* c : roles) (void)c->control().send_line("mute");
  for (auto* c : roles) (void)expect(*c, "muted", 10s);
  for (auto* c : roles) (void)c->control().send_line("quit");
  double cpu = reaped_cpu;
  auto finish = [&](ChildProcess& c, double extra) {
    std::string name = c.name();
    if (!c.wait(10s)) c.kill_and_reap();
    cpu += c.cpu_seconds();
    result.cpu_by_process.emplace_back(name, c.cpu_seconds() + extra);
  };
  finish(leader, 0);
  // follower-1's share includes the process that was killed.
  for (size_t i = 0; i < followers.size(); ++i) finish(followers[i], i == 0 ? reaped_cpu : 0);
  double own = self_cpu_seconds() - self_cpu_start;
  result.cpu_by_process.emplace_back("coordinator", own);
  result.cpu_seconds = cpu + own;
  return result;
}

}  // namespace rdmarepl::kvdemo
