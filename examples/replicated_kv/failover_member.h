// The member role of a failover run (failover_run.h): a ReplicaNode over the demo store,
// started as `--role member`. Control protocol (one line each way, key=value fields):
//   member -> "ready"                                     once the node campaigns
//   coord  -> "role"        member -> "role name=R epoch=E leader=ID last=S"
//   coord  -> "write first=N count=M"
//          member -> "acked first=N count=K epoch=E [message=...]"
//                    writes N..N+M-1 (failover_key/value) replicated and waited for; K < M
//                    when the node does not lead (or stopped leading): the message says why
//   coord  -> "check count=A"   member -> "check missing=X"  of writes 0..A-1, how many the
//                                          store lacks or holds with another value
//   coord  -> "digest"      member -> "digest value=D last=S"
//   coord  -> "quit"                                      the node resigns and exits 0
#pragma once

#include "control_socket.h"
#include "flags.h"

namespace rdmarepl::kvdemo {

int run_member(const Flags& flags, ControlSocket& ctl);

}  // namespace rdmarepl::kvdemo
