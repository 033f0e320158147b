// The processes of a failover run (failover_run.h): a local etcd, and a group of member
// processes (failover_member.h) on loopback ports that the coordinating process asks
// questions over their control sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "child_process.h"
#include "failover_run.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "tcp_proxy.h"

namespace rdmarepl::kvdemo {

// Debian's etcd as a cluster of `members` processes (1 or 3) on free loopback ports, data
// directories under `dir`, and the heartbeat that lets it grant (and expire) 1 s leases on
// time; `urls` gets their client URLs, comma-separated (the members' --etcd). Returns once
// every member answers.
Result<std::vector<ChildProcess>> start_etcd(const std::filesystem::path& dir, uint32_t members,
                                             std::string& urls);

// Field `key` of a control line as a number, `fallback` when absent or not a number.
uint64_t number(const std::string& line, std::string_view key, uint64_t fallback);

// etcd's own count of the requests it received (the sum of grpc_server_msg_received_total
// on its /metrics: one per unary request, one per keep-alive message) and its process's CPU
// time so far, from /proc.
struct EtcdTraffic {
  uint64_t requests = 0;
  double cpu_seconds = 0;
};
Result<EtcdTraffic> etcd_traffic(const std::string& url, pid_t pid);

struct RoleInfo {
  std::string name;
  uint64_t epoch = 0;
};

class Group {
 public:
  // `extra` goes to every member's command line (e.g. --plain).
  Group(const FailoverConfig& c, std::filesystem::path root, std::string etcd,
        std::vector<std::string> extra = {});

  // Picks the members' ports and starts each. With Fault::cut_etcd each member reaches
  // etcd (one URL) through a proxy of its own.
  Status init();
  // Starts member `i` (again) with its directory as it is; returns once it is ready.
  Status start(size_t i);
  void kill(size_t i);
  // SIGSTOP / SIGCONT: a stalled process keeps its sockets; nobody asks it anything meanwhile.
  void pause(size_t i);
  void resume(size_t i);
  // Member i's path to etcd (Fault::cut_etcd only).
  void cut_etcd(size_t i) { proxies_[i]->cut(); }
  void heal_etcd(size_t i) { proxies_[i]->heal(); }
  [[nodiscard]] size_t size() const { return procs_.size(); }
  [[nodiscard]] bool running(size_t i) const { return procs_[i].running(); }
  [[nodiscard]] bool answers(size_t i) const { return running(i) && !paused_[i]; }
  [[nodiscard]] ChildProcess& process(size_t i) { return procs_[i]; }

  // Sends `line` (none when empty) and reads the answer, which must start with `prefix`.
  Result<std::string> ask(size_t i, const std::string& line, std::string_view prefix,
                          std::chrono::milliseconds timeout);
  Status send(size_t i, const std::string& line);
  Result<RoleInfo> role(size_t i);
  // The answering member that leads in an epoch above `above` (the highest if two still
  // say so), polled every 5 ms until `deadline`.
  Result<size_t> leader(const Deadline& deadline, uint64_t above = 0);
  Status wait_role(size_t i, std::string_view name, const Deadline& deadline);
  // Asks every member to quit; kills the ones that do not within 10 s.
  void quit();

 private:
  const FailoverConfig& c_;
  std::filesystem::path root_;
  std::string etcd_;
  std::vector<std::string> extra_;
  std::string members_;
  std::vector<ChildProcess> procs_;
  std::vector<bool> paused_;
  std::vector<std::unique_ptr<TcpProxy>> proxies_;
};

}  // namespace rdmarepl::kvdemo
