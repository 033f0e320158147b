// Starts Debian's etcd for a test: a temporary data directory, loopback ports, the fast
// heartbeat that lets it grant 1 s leases. Stopped (SIGKILL) and removed by the destructor.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "rdmarepl/coordination/coordinator.h"

namespace rdmarepl::test {

class EtcdServer {
 public:
  static bool available() { return ::access("/usr/bin/etcd", X_OK) == 0; }

  explicit EtcdServer(int client_port) : port_(client_port) {
    dir_ = std::filesystem::temp_directory_path() /
           ("rdmarepl-etcd-" + std::to_string(::getpid()) + "-" + std::to_string(client_port));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string client = "http://127.0.0.1:" + std::to_string(port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(port_ + 1);
    const std::string cluster = "default=" + peer;
    const std::string data = (dir_ / "data").string();
    const std::string logfile = (dir_ / "etcd.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(logfile.c_str(), "w", stderr);
      (void)f;
      ::execl("/usr/bin/etcd", "etcd", "--data-dir", data.c_str(), "--listen-client-urls",
              client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
              peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
              cluster.c_str(), "--heartbeat-interval", "50", "--election-timeout", "250",
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    url_ = client;
  }
  ~EtcdServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  [[nodiscard]] const std::string& url() const { return url_; }

  // True once `c` (a coordinator on url()) gets answers; etcd answers about a second after
  // it starts. Gives up after 10 s.
  static bool wait_ready(coordination::Coordinator& c) {
    for (int i = 0; i < 100; ++i) {
      if (c.leader("/rdmarepl-test/ready").ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  int port_;
  pid_t pid_ = -1;
  std::filesystem::path dir_;
  std::string url_;
};

}  // namespace rdmarepl::test
