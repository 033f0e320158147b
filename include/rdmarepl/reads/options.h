// Options of the read server (on a replica) and of the read client. docs/reads.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/kind.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::reads {

struct ReadServerOptions {
  transport::Endpoint listen;  // port 0 picks a free port (see local_endpoint())
  transport::TransportKind transport = transport::TransportKind::tcp;
  std::string node_id = "rdmarepl-reads";
  std::string pre_shared_key;  // empty: clients are not authenticated
  // Without a key, validate() refuses a listen address beyond loopback (anyone who reached
  // the port could read the whole store) unless this is set; the server then warns.
  bool allow_unauthenticated = false;
  bool leader = false;        // this server answers Consistency::leader reads
  uint32_t queue_depth = 16;  // requests one client connection may have in flight
  uint32_t max_request_bytes = 64 * 1024;
  uint32_t max_response_bytes = 256 * 1024;
  uint32_t max_connections = 64;
  // Cap on how long an at_least read may wait for the replica to catch up.
  std::chrono::milliseconds max_wait{2000};
  // How long a connecting client has for its handshake, from its accept (a silent or slow
  // one is then closed and counted in ReadServerStats::handshake_timeouts).
  std::chrono::milliseconds connect_timeout{5000};

  [[nodiscard]] Status validate() const;
};

struct ReadClientOptions {
  std::vector<transport::Endpoint> replicas;  // reads with any / at_least go here
  std::optional<transport::Endpoint> leader;  // reads with Consistency::leader go here
  transport::TransportKind transport = transport::TransportKind::tcp;
  std::string node_id = "rdmarepl-read-client";
  std::string pre_shared_key;
  uint32_t max_keys_per_message = 64;
  std::chrono::milliseconds connect_timeout{2000};
  // How long a get() waits for its responses (at_least reads: plus their wait).
  std::chrono::milliseconds request_timeout{2000};
  // A replica that failed is tried again after this long.
  std::chrono::milliseconds reconnect_interval{500};

  [[nodiscard]] Status validate() const;
};

}  // namespace rdmarepl::reads
