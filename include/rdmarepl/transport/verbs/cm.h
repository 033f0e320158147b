// Connection set-up through librdmacm (VerbsOptions::use_rdma_cm): a listener on an RDMA CM
// id, and the active side's address/route resolution and connect. Ring descriptors travel
// in the CM private data (layout: magic u8 'R' | version u8 | region count u8 | reserved u8 |
// regions, 16 bytes each in RemoteRegion's wire format).
#pragma once

#include <memory>

#include "rdmarepl/transport/transport.h"
#include "rdmarepl/transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {

// Regions that fit: the CM limits private data to 56 bytes on connect, 196 on accept.
inline constexpr size_t kCmConnectRegions = 3;
inline constexpr size_t kCmAcceptRegions = 12;

Result<std::unique_ptr<Listener>> cm_listen(std::shared_ptr<TransportState> state,
                                            const Endpoint& where);
Result<std::unique_ptr<Connection>> cm_connect(std::shared_ptr<TransportState> state,
                                               const Endpoint& where,
                                               const ConnectionOptions& options);

}  // namespace rdmarepl::transport::verbs
