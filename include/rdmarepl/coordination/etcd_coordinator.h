// EtcdCoordinator: the Coordinator over etcd's v3 JSON gateway (POST /v3/..., bytes fields
// base64, int64 fields as strings), with libcurl. docs/failover.md says why the gateway
// rather than gRPC.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rdmarepl/coordination/coordinator.h"

namespace rdmarepl::coordination {

struct EtcdOptions {
  // Client URLs of the etcd members ("http://127.0.0.1:2379"); a request that fails on one
  // is tried on the next.
  std::vector<std::string> endpoints;
  // One request's deadline, connecting included. A leader's lease deadline must leave room
  // for it (docs/failover.md, "Knobs").
  std::chrono::milliseconds request_timeout{500};
};

Status validate(const EtcdOptions& options);

// Fails when the options are invalid; reaching etcd is checked by the first call.
Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options);

}  // namespace rdmarepl::coordination
