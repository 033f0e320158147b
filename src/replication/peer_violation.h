// Whether a connection failed through its peer's fault, for the engines' protocol_errors.
#pragma once

#include "rdmarepl/core/error.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

// Whether the failure of `conn` was the peer's doing: it sent what no conforming peer sends
// (a frame that is not one, a write outside what it was granted). Such a failure is counted
// in `metrics.protocol_errors`, beside the engine's own checks; a peer that went away is not.
inline bool count_peer_violation(const transport::Connection& conn, ChannelMetrics& metrics) {
  const Error why = conn.error();
  if (!why.is(Errc::protocol_error) && !why.is(Errc::remote_access)) return false;
  ChannelMetrics::add(metrics.protocol_errors);
  return true;
}

}  // namespace rdmarepl::replication::detail
