#include "failover_group.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "flags.h"
#include "rdmarepl/coordination/etcd_coordinator.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::kvdemo {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

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

size_t append_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Result<std::string> http_get(const std::string& url) {
  CURL* c = curl_easy_init();
  if (c == nullptr) return Error(Errc::io_error, "curl_easy_init failed");
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK)
    return Error(Errc::io_error, fmt::format("GET {}: {}", url, curl_easy_strerror(rc)));
  if (status != 200) return Error(Errc::io_error, fmt::format("GET {}: HTTP {}", url, status));
  return body;
}

}  // namespace

Result<EtcdTraffic> etcd_traffic(const std::string& url, pid_t pid) {
  auto body = http_get(url + "/metrics");
  if (!body) return std::move(body).error();
  EtcdTraffic t;
  std::istringstream in(*body);
  std::string line;
  bool seen = false;
  while (std::getline(in, line)) {
    if (line.rfind("grpc_server_msg_received_total{", 0) != 0) continue;
    const size_t sp = line.rfind(' ');
    t.requests += static_cast<uint64_t>(std::stod(line.substr(sp + 1)));
    seen = true;
  }
  if (!seen)
    return Error(Errc::protocol_error,
                 url + "/metrics has no grpc_server_msg_received_total: not an etcd 3.4?");
  // utime and stime: fields 14 and 15 of /proc/PID/stat, after the parenthesised name.
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos)
    return Error(Errc::io_error, fmt::format("cannot read /proc/{}/stat", pid));
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  t.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return t;
}

uint64_t number(const std::string& line, std::string_view key, uint64_t fallback) {
  auto n = parse_count(field(line, key), key);
  return n ? *n : fallback;
}

Result<std::vector<ChildProcess>> start_etcd(const fs::path& dir, uint32_t members,
                                             std::string& urls) {
  if (::access("/usr/bin/etcd", X_OK) != 0)
    return Error(Errc::not_found,
                 "/usr/bin/etcd is not installed: install Debian's etcd-server (scripts/setup "
                 "does) or pass the URL of a running etcd");
  std::vector<std::string> client, peer;
  std::string cluster;
  for (uint32_t i = 0; i < members; ++i) {
    auto c = free_port();
    if (!c) return std::move(c).error();
    auto p = free_port();
    if (!p) return std::move(p).error();
    client.push_back(fmt::format("http://127.0.0.1:{}", *c));
    peer.push_back(fmt::format("http://127.0.0.1:{}", *p));
    cluster += fmt::format("{}e{}={}", i == 0 ? "" : ",", i, peer.back());
  }
  std::vector<ChildProcess> procs;
  for (uint32_t i = 0; i < members; ++i) {
    const std::string name = fmt::format("e{}", i);
    auto etcd = ChildProcess::spawn("etcd " + name,
                                    {"--name",
                                     name,
                                     "--data-dir",
                                     (dir / ("etcd-" + name)).string(),
                                     "--listen-client-urls",
                                     client[i],
                                     "--advertise-client-urls",
                                     client[i],
                                     "--listen-peer-urls",
                                     peer[i],
                                     "--initial-advertise-peer-urls",
                                     peer[i],
                                     "--initial-cluster",
                                     cluster,
                                     "--initial-cluster-state",
                                     "new",
                                     "--heartbeat-interval",
                                     "50",
                                     "--election-timeout",
                                     "250"},
                                    "/usr/bin/etcd", (dir / (name + ".log")).string());
    if (!etcd) return std::move(etcd).error();
    procs.push_back(std::move(*etcd));
  }
  // Every member answers (a cluster answers once it elected its own leader).
  for (uint32_t i = 0; i < members; ++i) {
    coordination::EtcdOptions eo;
    eo.endpoints = {client[i]};
    auto probe = coordination::make_etcd_coordinator(eo);
    if (!probe) return std::move(probe).error();
    bool up = false;
    for (int k = 0; k < 200 && !up; ++k) {
      up = (*probe)->leader("/rdmarepl/ready").ok();
      if (!up) std::this_thread::sleep_for(50ms);
    }
    if (!up)
      return Error(Errc::timeout, fmt::format("etcd member e{} did not answer within 10 s; see {}",
                                              i, (dir / fmt::format("e{}.log", i)).string()));
  }
  urls.clear();
  for (const auto& c : client) urls += (urls.empty() ? "" : ",") + c;
  return procs;
}

Group::Group(const FailoverConfig& c, fs::path root, std::string etcd,
             std::vector<std::string> extra)
    : c_(c),
      root_(std::move(root)),
      etcd_(std::move(etcd)),
      extra_(std::move(extra)),
      procs_(c.members),
      paused_(c.members, false) {}

Status Group::init() {
  if (c_.fault == Fault::cut_etcd) {
    const size_t colon = etcd_.rfind(':');
    if (etcd_.find(',') != std::string::npos || etcd_.rfind("http://127.0.0.1:", 0) != 0)
      return Error(Errc::invalid_argument,
                   "cutting a member off from etcd needs one loopback etcd (http://127.0.0.1:P), "
                   "not " +
                       etcd_);
    auto port = parse_count(etcd_.substr(colon + 1), "etcd port");
    if (!port) return std::move(port).error();
    for (uint32_t i = 0; i < c_.members; ++i) {
      auto p = TcpProxy::start("127.0.0.1", static_cast<uint16_t>(*port));
      if (!p) return std::move(p).error();
      proxies_.push_back(std::move(*p));
    }
  }
  for (uint32_t i = 0; i < c_.members; ++i) {
    auto p = free_port();
    if (!p) return std::move(p).error();
    members_ += fmt::format("{}n{}=127.0.0.1:{}", i == 0 ? "" : ",", i, *p);
  }
  for (uint32_t i = 0; i < c_.members; ++i) RDMAREPL_TRY(start(i));
  return ok_status();
}

Status Group::start(size_t i) {
  const std::string id = fmt::format("n{}", i);
  const std::string etcd =
      proxies_.empty() ? etcd_ : fmt::format("http://127.0.0.1:{}", proxies_[i]->port());
  std::vector<std::string> args = {"--role",       "member",
                                   "--id",         id,
                                   "--members",    members_,
                                   "--etcd",       etcd,
                                   "--dir",        (root_ / id).string(),
                                   "--ack",        std::string(to_string(c_.ack)),
                                   "--lease-ms",   std::to_string(c_.lease_ttl.count()),
                                   "--suspect-ms", std::to_string(c_.suspect_after.count()),
                                   "--value-size", std::to_string(c_.value_size)};
  args.insert(args.end(), extra_.begin(), extra_.end());
  auto p = ChildProcess::spawn(id, args);
  if (!p) return std::move(p).error();
  procs_[i] = std::move(*p);
  auto ready = ask(i, {}, "ready", 60s);
  return ready ? ok_status() : Status(std::move(ready).error());
}

void Group::kill(size_t i) {
  procs_[i].kill_and_reap();
  paused_[i] = false;
}

void Group::pause(size_t i) {
  ::kill(procs_[i].pid(), SIGSTOP);
  paused_[i] = true;
}

void Group::resume(size_t i) {
  ::kill(procs_[i].pid(), SIGCONT);
  paused_[i] = false;
}

Result<std::string> Group::ask(size_t i, const std::string& line, std::string_view prefix,
                               std::chrono::milliseconds timeout) {
  ChildProcess& p = procs_[i];
  if (!line.empty()) RDMAREPL_TRY(send(i, line));
  auto got = p.control().read_line(timeout);
  if (!got) return Error(got.error().code(), p.name() + ": " + got.error().message());
  if (got->rfind("error ", 0) == 0)
    return Error(Errc::io_error, p.name() + " failed: " + error_text(*got));
  if (got->rfind(prefix, 0) != 0)
    return Error(Errc::protocol_error,
                 fmt::format("{} sent '{}', expected '{}...'", p.name(), *got, prefix));
  return got;
}

Status Group::send(size_t i, const std::string& line) {
  return procs_[i].control().send_line(line);
}

Result<RoleInfo> Group::role(size_t i) {
  auto r = ask(i, "role", "role ", 10s);
  if (!r) return std::move(r).error();
  return RoleInfo{field(*r, "name"), number(*r, "epoch", 0)};
}

Result<size_t> Group::leader(const Deadline& deadline, uint64_t above) {
  for (;;) {
    int best = -1;
    uint64_t best_epoch = above;
    for (size_t i = 0; i < procs_.size(); ++i) {
      if (!answers(i)) continue;
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

Status Group::wait_role(size_t i, std::string_view name, const Deadline& deadline) {
  for (;;) {
    auto r = role(i);
    if (!r) return std::move(r).error();
    if (r->name == name) return ok_status();
    if (deadline.expired())
      return Error(Errc::timeout, fmt::format("n{} did not become {} in time", i, name));
    std::this_thread::sleep_for(10ms);
  }
}

void Group::quit() {
  for (auto& p : procs_)
    if (p.running()) (void)p.control().send_line("quit");
  for (auto& p : procs_)
    if (p.running() && !p.wait(10s)) p.kill_and_reap();
}

}  // namespace rdmarepl::kvdemo
