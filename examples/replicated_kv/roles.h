// The two role processes of a replicated run. The coordinating process (cluster.h) starts
// this same executable with `--role leader|follower`; main() hands over to run_role().
//
// Control protocol (one text line each way, fields are key=value):
//   follower -> "ready port=P transport=T"            after its channel listens
//   leader   -> "ready transport=T"                   after its channel is created
//   coord    -> "go"                                   leader starts writing
//   leader   -> "progress n=N"                         every ~50 ms while writing
//   leader   -> "done n=N elapsed_ns=E bytes=B ... digest=D <latency fields>"
//   coord    -> "digest"          follower/leader -> "digest value=D"
//   coord    -> "quit"                                 the role exits 0
//   any      -> "error message=..."                    then exits non-zero
#pragma once

#include <optional>

namespace rdmarepl::kvdemo {

// When argv asks for a role (`--role ...`), runs it and returns the process exit code;
// otherwise returns nothing and the program carries on as the coordinator.
std::optional<int> run_role_if_requested(int argc, char** argv);

}  // namespace rdmarepl::kvdemo
