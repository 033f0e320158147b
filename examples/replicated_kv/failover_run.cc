#include "failover_run.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "child_process.h"
#include "flags.h"
#include "rdmarepl/coordination/etcd_coordinator.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::kvdemo {

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A loopback port nobody listens on right now (the kernel's pick for an ephemeral bind).
Result<uint16_t> free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_error(errno, "socket for a free port");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return errno_error(err, "binding a loopback port");
  return ntohs(a.sin_port);
}

// Field `key` of a control line as a number, `fallback` when absent or not a number.
uint64_t number(const std::string& line, std::string_view key, uint64_t fallback) {
  auto n = parse_count(field(line, key), key);
  return n ? *n : fallback;
}

// Debian's etcd on loopback ports with a temporary data directory, and the heartbeat that
// lets it grant (and expire) 1 s leases on time.
Result<ChildProcess> start_etcd(const fs::path& dir, std::string& url) {
  auto client = free_port();
  if (!client) return std::move(client).error();
  auto peer = free_port();
  if (!peer) return std::move(peer).error();
  url = fmt::format("http://127.0.0.1:{}", *client);
  const std::string peer_url = fmt::format("http://127.0.0.1:{}", *peer);
  if (::access("/usr/bin/etcd", X_OK) != 0)
    return Error(Errc::not_found,
                 "/usr/bin/etcd is not installed: install Debian's etcd-server (scripts/setup "
                 "does) or pass the URL of a running etcd");
  auto etcd = ChildProcess::spawn(
      "etcd",
      {"--data-dir", (dir / "etcd").string(), "--listen-client-urls", url,
       "--advertise-client-urls", url, "--listen-peer-urls", peer_url,
       "--initial-advertise-peer-urls", peer_url, "--initial-cluster", "default=" + peer_url,
       "--heartbeat-interval", "50", "--election-timeout", "250"},
      "/usr/bin/etcd", (dir / "etcd.log").string());
  if (!etcd) return etcd;
  coordination::EtcdOptions eo;
  eo.endpoints = {url};
  auto probe = coordination::make_etcd_coordinator(eo);
  if (!probe) return std::move(probe).error();
  for (int i = 0; i < 200; ++i) {
    if ((*probe)->leader("/rdmarepl/ready").ok()) return etcd;
    std::this_thread::sleep_for(50ms);
  }
  return Error(Errc::timeout,
               "etcd did not answer within 10 s; see " + (dir / "etcd.log").string());
}

struct RoleInfo {
  std::string name;
  uint64_t epoch = 0;
};

class Group {
 public:
  Group(const FailoverConfig& c, fs::path root, std::string etcd)
      : c_(c), root_(std::move(root)), etcd_(std::move(etcd)), procs_(c.members) {}

  Status init() {
    for (uint32_t i = 0; i < c_.members; ++i) {
      auto p = free_port();
      if (!p) return std::move(p).error();
      members_ += fmt::format("{}n{}=127.0.0.1:{}", i == 0 ? "" : ",", i, *p);
    }
    for (uint32_t i = 0; i < c_.members; ++i) RDMAREPL_TRY(start(i));
    return ok_status();
  }
  Status start(size_t i) {
    const std::string id = fmt::format("n{}", i);
    auto p = ChildProcess::spawn(
        id,
        {"--role", "member", "--id", id, "--members", members_, "--etcd", etcd_, "--dir",
         (root_ / id).string(), "--ack", std::string(to_string(c_.ack)), "--lease-ms",
         std::to_string(c_.lease_ttl.count()), "--suspect-ms",
         std::to_string(c_.suspect_after.count()), "--value-size", std::to_string(c_.value_size)});
    if (!p) return std::move(p).error();
    procs_[i] = std::move(*p);
    auto ready = ask(i, {}, "ready", 60s);
    return ready ? ok_status() : Status(std::move(ready).error());
  }
  void kill(size_t i) { procs_[i].kill_and_reap(); }
  [[nodiscard]] size_t size() const { return procs_.size(); }
  [[nodiscard]] bool running(size_t i) const { return procs_[i].running(); }

  // Sends `line` (none when empty) and reads the answer, which must start with `prefix`.
  Result<std::string> ask(size_t i, const std::string& line, std::string_view prefix,
                          std::chrono::milliseconds timeout) {
    ChildProcess& p = procs_[i];
    if (!line.empty()) RDMAREPL_TRY(p.control().send_line(line));
    auto got = p.control().read_line(timeout);
    if (!got) return Error(got.error().code(), p.name() + ": " + got.error().message());
    if (got->rfind("error ", 0) == 0)
      return Error(Errc::io_error, p.name() + " failed: " + error_text(*got));
    if (got->rfind(prefix, 0) != 0)
      return Error(Errc::protocol_error,
                   fmt::format("{} sent '{}', expected '{}...'", p.name(), *got, prefix));
    return got;
  }
  Result<RoleInfo> role(size_t i) {
    auto r = ask(i, "role", "role ", 10s);
    if (!r) return std::move(r).error();
    return RoleInfo{field(*r, "name"), number(*r, "epoch", 0)};
  }
  // The running member that leads (the highest epoch if two still say so), polled every
  // 5 ms until `deadline`.
  Result<size_t> leader(const Deadline& deadline) {
    for (;;) {
      int best = -1;
      uint64_t best_epoch = 0;
      for (size_t i = 0; i < procs_.size(); ++i) {
        if (!running(i)) continue;
        auto r = role(i);
        if (!r) return std::move(r).error();
        if (r->name == "leader" && r->epoch > best_epoch) {
          best = static_cast<int>(i);
          best_epoch = r->epoch;
        }
      }
      if (best >= 0) return static_cast<size_t>(best);
      if (deadline.expired())
        return Error(Errc::timeout, "no member leads the group; see the members' logs");
      std::this_thread::sleep_for(5ms);
    }
  }
  Status wait_role(size_t i, std::string_view name, const Deadline& deadline) {
    for (;;) {
      auto r = role(i);
      if (!r) return std::move(r).error();
      if (r->name == name) return ok_status();
      if (deadline.expired())
        return Error(Errc::timeout, fmt::format("n{} did not become {} in time", i, name));
      std::this_thread::sleep_for(10ms);
    }
  }
  void quit() {
    for (auto& p : procs_)
      if (p.running()) (void)p.control().send_line("quit");
    for (auto& p : procs_)
      if (p.running() && !p.wait(10s)) p.kill_and_reap();
  }

 private:
  const FailoverConfig& c_;
  fs::path root_;
  std::string etcd_;
  std::string members_;
  std::vector<ChildProcess> procs_;
};

class Client {
 public:
  Client(Group& g, const FailoverConfig& c) : g_(g), c_(c) {}

  // Asks member `l` to write the next `count` writes; returns how many it acknowledged.
  Result<uint64_t> write(size_t l, uint64_t count) {
    auto r = g_.ask(l, fmt::format("write first={} count={}", next_, count), "acked ", 60s);
    if (!r) return std::move(r).error();
    const uint64_t k = number(*r, "count", 0);
    next_ += k;
    return k;
  }
  // Writes until `count` more were acknowledged, following the leader when it changes.
  Status stretch(uint64_t count, const Deadline& deadline) {
    const uint64_t target = next_ + count;
    auto l = g_.leader(deadline);
    if (!l) return std::move(l).error();
    while (next_ < target) {
      auto k = write(*l, std::min<uint64_t>(c_.chunk, target - next_));
      if (!k) return std::move(k).error();
      if (*k == 0) {
        if (deadline.expired()) return Error(Errc::timeout, "the run's --timeout passed");
        l = g_.leader(deadline);
        if (!l) return std::move(l).error();
      }
    }
    leader_ = *l;
    return ok_status();
  }
  // Kill -9 of the leader -> the first write a new leader acknowledges, in ms. Under
  // ack=all no write is acknowledged while a member is down, so there the killed member is
  // restarted at once (its restart is part of the failover time).
  Result<double> fail_over(const Deadline& deadline) {
    const size_t old = leader_;
    g_.kill(old);
    const uint64_t t0 = mono_ns();
    if (c_.ack == replication::AckMode::all) RDMAREPL_TRY(g_.start(old));
    for (;;) {
      auto l = g_.leader(deadline);
      if (!l) return std::move(l).error();
      auto k = write(*l, 1);
      if (!k) return std::move(k).error();
      if (*k == 1) {
        leader_ = *l;
        return static_cast<double>(mono_ns() - t0) / 1e6;
      }
      if (deadline.expired()) return Error(Errc::timeout, "no new leader acknowledged a write");
      std::this_thread::sleep_for(2ms);
    }
  }
  [[nodiscard]] uint64_t acknowledged() const { return next_; }
  [[nodiscard]] size_t leader() const { return leader_; }

 private:
  Group& g_;
  const FailoverConfig& c_;
  uint64_t next_ = 0;  // writes 0..next_-1 were acknowledged (a prefix)
  size_t leader_ = 0;
};

// Waits until every member's digest and position agree.
Result<std::vector<std::pair<std::string, Digest>>> converge(Group& g, const Deadline& deadline,
                                                             bool& converged) {
  for (;;) {
    std::vector<std::pair<std::string, Digest>> out;
    std::string first_last;
    converged = true;
    for (size_t i = 0; i < g.size(); ++i) {
      auto r = g.ask(i, "digest", "digest ", 30s);
      if (!r) return std::move(r).error();
      Digest d;
      Digest::parse(field(*r, "value"), d);
      const std::string last = field(*r, "last");
      if (i == 0) first_last = last;
      converged = converged && last == first_last && (out.empty() || out.front().second == d);
      out.emplace_back(fmt::format("n{}", i), d);
    }
    if (converged || deadline.expired()) return out;
    std::this_thread::sleep_for(50ms);
  }
}

Status run(Group& g, const FailoverConfig& c, FailoverResult& result) {
  const Deadline deadline = Deadline::after(c.timeout);
  Client client(g, c);
  RDMAREPL_TRY(client.stretch(c.writes_per_leader, deadline));
  for (uint32_t f = 0; f < c.failovers; ++f) {
    const size_t old = client.leader();
    auto ms = client.fail_over(deadline);
    if (!ms) return std::move(ms).error();
    result.failover_ms.push_back(*ms);
    if (c.progress)
      fmt::print(
          "  failover {}/{}: n{} killed (SIGKILL), n{} leads; first write acknowledged "
          "after {:.0f} ms\n",
          f + 1, c.failovers, old, client.leader(), *ms);
    std::fflush(stdout);
    // With its old log: it must rejoin as a follower.
    if (!g.running(old)) RDMAREPL_TRY(g.start(old));
    RDMAREPL_TRY(g.wait_role(old, "follower", Deadline::after(60s)));
    RDMAREPL_TRY(client.stretch(c.writes_per_leader, deadline));
  }
  result.acknowledged = client.acknowledged();
  auto digests = converge(g, Deadline::after(60s), result.converged);
  if (!digests) return std::move(digests).error();
  result.digests = std::move(*digests);
  auto check =
      g.ask(client.leader(), fmt::format("check count={}", result.acknowledged), "check ", 120s);
  if (!check) return std::move(check).error();
  result.lost = number(*check, "missing", UINT64_MAX);
  result.verified = result.converged && result.lost == 0;
  return ok_status();
}

}  // namespace

std::string failover_key(uint64_t index) {
  return fmt::format("f{:015}", index);
}

std::string failover_value(uint64_t index, uint32_t size) {
  std::string v = fmt::format("{}:", index);
  v.resize(std::max<size_t>(size, v.size()), static_cast<char>('a' + index % 26));
  return v;
}

Result<FailoverResult> run_failovers(const FailoverConfig& c) {
  if (c.members < 3)
    return Error(Errc::invalid_argument,
                 fmt::format("{} members: a group that survives its leader's loss needs at "
                             "least 3",
                             c.members));
  const bool temp = c.dir.empty();
  const fs::path root =
      temp ? fs::temp_directory_path() / fmt::format("rdmarepl-failover-{}", ::getpid())
           : fs::path(c.dir);
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  if (ec) return Error(Errc::io_error, "cannot create " + root.string() + ": " + ec.message());

  FailoverResult result;
  result.members = c.members;
  const uint64_t t0 = mono_ns();
  Status st = ok_status();
  {
    std::string url = c.etcd;
    ChildProcess etcd;
    if (url.empty()) {
      auto e = start_etcd(root, url);
      if (!e) return std::move(e).error();
      etcd = std::move(*e);
    }
    Group g(c, root, url);
    st = g.init();
    if (st) st = run(g, c, result);
    g.quit();
  }
  result.seconds = static_cast<double>(mono_ns() - t0) / 1e9;
  if (temp) fs::remove_all(root, ec);
  if (!st) return std::move(st).error();
  return result;
}

}  // namespace rdmarepl::kvdemo
