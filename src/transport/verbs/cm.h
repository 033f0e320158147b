// Connection set-up through librdmacm (VerbsOptions::use_rdma_cm): a listener on an RDMA CM
// id, and the active side's address/route resolution and connect. The CM private data
// carries a 20-byte header naming each side's handshake landing buffer (magic u8 'R' |
// version u8 = 2 | handshake writes u8 | reserved u8 | landing buffer, 16 bytes in
// RemoteRegion's wire format); once connected, both sides run the bootstrap handshake
// (authenticated with the pre-shared key as over TCP) over the QP itself, and node ids,
// regions and app_data come from its Hello. docs/wire_format.md, "RDMA CM set-up".
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>

#include "rdmarepl/transport/transport.h"
#include "transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {

// The listener (cm_listener.cc): requests are admitted like TCP connections
// (bootstrap::Admission), each held with its queue pair until the peer's first handshake
// write arrives.
Result<std::unique_ptr<Listener>> cm_listen(std::shared_ptr<TransportState> state,
                                            const Endpoint& where);
Result<std::unique_ptr<Connection>> cm_connect(std::shared_ptr<TransportState> state,
                                               const Endpoint& where,
                                               const ConnectionOptions& options);

// Shared by cm.cc and cm_listener.cc.
// `where` as an IPv4 socket address (an empty host: any address).
Result<sockaddr_storage> cm_resolve(const Endpoint& where);
// A new event channel with a non-blocking descriptor.
Result<CmChannelHandle> cm_make_channel();
// "host:port" of the peer of a connected (or requesting) id.
std::string cm_peer_address(rdma_cm_id* id);

}  // namespace rdmarepl::transport::verbs
