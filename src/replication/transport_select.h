// The one place that turns TransportKind into a Transport. `automatic` prefers verbs when
// the build has it and an active RDMA device exists, and otherwise uses TCP, logging why.
#pragma once

#include <memory>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication {

// Errc::no_device / Errc::unsupported with a clear message when verbs is demanded but the
// build lacks it or no active device exists. `rdma_cm`: a verbs transport sets its
// connections up with RDMA CM (ChannelOptions::rdma_cm; a TCP transport ignores it).
Result<std::unique_ptr<transport::Transport>> select_transport(TransportKind kind,
                                                               bool rdma_cm = false);

}  // namespace rdmarepl::replication
