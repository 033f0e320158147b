// Validation of the read server's and the read client's options.
#include <fmt/format.h>

#include "rdmarepl/reads/options.h"
#include "read_format.h"
#include "replication/listen_policy.h"

namespace rdmarepl::reads {
namespace {

// A response must hold the entries of a full request even when no value fits.
constexpr uint32_t kMinResponseBytes =
    kResponseHeaderBytes + kResponseEntryBytes * kMaxKeysPerRequest;

}  // namespace

Status ReadServerOptions::validate() const {
  if (queue_depth == 0 || queue_depth > 1024)
    return Error(Errc::invalid_argument,
                 fmt::format("ReadServerOptions::queue_depth is {}; use 1..1024", queue_depth));
  if (max_request_bytes < kRequestHeaderBytes + 2 || max_request_bytes > (16u << 20))
    return Error(Errc::invalid_argument,
                 fmt::format("ReadServerOptions::max_request_bytes is {}; use {}..16 MiB",
                             max_request_bytes, kRequestHeaderBytes + 2));
  if (max_response_bytes < kMinResponseBytes || max_response_bytes > (64u << 20))
    return Error(Errc::invalid_argument,
                 fmt::format("ReadServerOptions::max_response_bytes is {}; use {}..64 MiB",
                             max_response_bytes, kMinResponseBytes));
  if (max_connections == 0)
    return Error(Errc::invalid_argument, "ReadServerOptions::max_connections is 0; use 1 or more");
  if (connect_timeout.count() <= 0)
    return Error(Errc::invalid_argument,
                 fmt::format("ReadServerOptions::connect_timeout is {} ms; use 1 ms or more",
                             connect_timeout.count()));
  if (!allow_unauthenticated && replication::detail::open_to_network(listen.host, pre_shared_key))
    return Error(Errc::invalid_argument,
                 fmt::format("ReadServerOptions::listen = \"{}\" is not a loopback address and "
                             "pre_shared_key is empty: anyone who can reach port {} could read "
                             "the whole store. Set pre_shared_key (the channel's), or set "
                             "allow_unauthenticated = true if every host that can reach the port "
                             "is trusted",
                             listen.host, listen.port));
  return ok_status();
}

Status ReadClientOptions::validate() const {
  if (replicas.empty() && !leader)
    return Error(Errc::invalid_argument,
                 "ReadClientOptions names no replica and no leader; give at least one endpoint");
  if (max_keys_per_message == 0 || max_keys_per_message > kMaxKeysPerRequest)
    return Error(Errc::invalid_argument,
                 fmt::format("ReadClientOptions::max_keys_per_message is {}; use 1..{}",
                             max_keys_per_message, kMaxKeysPerRequest));
  return ok_status();
}

}  // namespace rdmarepl::reads
