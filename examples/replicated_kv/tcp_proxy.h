// A TCP proxy on a free loopback port to one target, for cutting a member off from etcd in
// a failover run (Fault::cut_etcd): each accepted connection gets its own connection
// to the target and bytes flow both ways, until cut(). A cut proxy acts as a network
// partition: it drops its connections' bytes and accepts new connections without ever
// answering on them (the client's request timeout fires), until heal().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::kvdemo {

class TcpProxy {
 public:
  static Result<std::unique_ptr<TcpProxy>> start(const std::string& host, uint16_t port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  [[nodiscard]] uint16_t port() const noexcept { return port_; }
  void cut() { set(true); }
  void heal() { set(false); }

 private:
  TcpProxy(int listen_fd, uint16_t port, std::string host, uint16_t target_port, int wake_r,
           int wake_w);
  void set(bool cut);
  void loop();
  void accept_one();
  void close_all();

  int listen_fd_;
  uint16_t port_;
  std::string host_;
  uint16_t target_port_;
  int wake_r_, wake_w_;
  std::atomic<bool> cut_{false}, stop_{false};
  std::vector<std::pair<int, int>> pairs_;  // (client, upstream); upstream -1 while cut
  std::thread thread_;
};

}  // namespace rdmarepl::kvdemo
