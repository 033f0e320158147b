// Whether a connection failed through its peer's fault, for the engines' protocol_errors.
#pragma once

#include "rdmarepl/core/error.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

// Whether the failure of `conn` was the peer's doing: it sent what no conforming peer sends
// (a frame that is not one, a write outside what it was granted). Such failures count in
// ChannelMetrics::protocol_errors beside the engine's own checks; a peer that went away does
// not.
[[nodiscard]] inline bool peer_violated_protocol(const transport::Connection& conn) {
  const Error why = conn.error();
  return why.is(Errc::protocol_error) || why.is(Errc::remote_access);
}

}  // namespace rdmarepl::replication::detail
