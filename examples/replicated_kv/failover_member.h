// The member role of a failover run (failover_run.h): a ReplicaNode over the demo store,
// started as `--role member`. Control protocol (one line each way, key=value fields):
//   member -> "ready"                                     once the node campaigns
//   coord  -> "role"        member -> "role name=R epoch=E leader=ID last=S"
//   coord  -> "write first=N count=M"
//          member -> "acked first=N count=K epoch=E [message=...]"
//                    writes N..N+M-1 (failover_key/value, and the register writes among
//                    them) replicated and waited for; K < M when the node does not lead
//                    (or stopped leading): the message says why
//   coord  -> "read"        member -> "read ok=1 epoch=E values=V0,V1,...|ok=0 message=..."
//                    the register keys, '-' when absent, confirmed by a replicated write
//   coord  -> "burst first=N count=M"  member -> "burst count=K ns=T [message=...]"
//                    writes N..N+M-1 back to back, waits for the last (burst.h)
//   coord  -> "cpu"         member -> "cpu seconds=S"     its CPU time so far
//   coord  -> "check count=A"   member -> "check missing=X first=I"  of writes 0..A-1, how
//                                          many the store lacks or holds with another value,
//                                          and the first of them ('-': none)
//   coord  -> "digest"      member -> "digest value=D last=S"
//   coord  -> "quit"                                      the node resigns and exits 0
// With --plain the same processes run a plain ReplicationChannel instead (the baseline of
// the group's write throughput): the first member leads epoch 1, the others follow it, no
// coordinator; they answer role, burst, cpu, digest and quit.
#pragma once

#include "control_socket.h"
#include "flags.h"
#include "rdmarepl/failover/node_options.h"

namespace rdmarepl::kvdemo {

// The node options of a member from its flags (--id, --members, --dir, --etcd, --ack,
// --lease-ms, --suspect-ms, --value-size), validated.
Result<failover::NodeOptions> member_options(const Flags& flags);

int run_member(const Flags& flags, ControlSocket& ctl);
int run_plain_member(const Flags& flags, ControlSocket& ctl);

}  // namespace rdmarepl::kvdemo
