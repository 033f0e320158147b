// The one place that turns TransportKind into a Transport. `automatic` prefers verbs when
// the build has it and an active RDMA device exists, and otherwise uses TCP, logging why.
#pragma once

#include <memory>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication {

// Errc::no_device / Errc::unsupported with a clear message when verbs is demanded but the
// build lacks it or no active device exists.
Result<std::unique_ptr<transport::Transport>> select_transport(TransportKind kind);

}  // namespace rdmarepl::replication
