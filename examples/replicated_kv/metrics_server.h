// A role process's Prometheus endpoint (--metrics-port): its channel's metrics, its read
// server's (--read-keys), its memory and the RDMA NICs' counters on
// GET http://127.0.0.1:<port>/metrics. Needs rdmarepl built with the Prometheus exposition
// (prometheus-cpp); otherwise start() says so.
#pragma once

#include <cstdint>
#include <memory>

#include "kv_store.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel.h"
#include "read_check.h"

namespace rdmarepl::kvdemo {

class MetricsServer {
 public:
  // Serves `channel`'s metrics (and those of `reads`, when not null) on `port` until
  // destroyed (which must happen before the channel and the read server go). Port 0:
  // serves nothing.
  static Result<MetricsServer> start(const replication::ReplicationChannel<KvStore>& channel,
                                     uint16_t port, const ReadServer* reads = nullptr);
  // Whether this build can serve metrics at all.
  static bool available() noexcept;

 private:
  std::shared_ptr<void> endpoint_;
};

}  // namespace rdmarepl::kvdemo
