// A real connection and a write-with-immediate round trip. `--peer` connects with a probe
// Hello (docs/wire_format.md, "Probe"): a follower's channel answers its zero-length
// write-with-immediate with immediate + 1 and closes; a `rdmarepl-doctor --listen` (the echo
// end, run_echo_listener()) writes the same 4 KiB pattern back with the immediate + 1.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "check.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/kind.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::doctor {

struct PeerOptions {
  transport::TransportKind transport = transport::TransportKind::automatic;
  std::string pre_shared_key;
  std::chrono::milliseconds timeout{5000};
};

// Bytes each round trip writes (and the echo writes back).
inline constexpr uint32_t kEchoBytes = 4096;

// One PASS/FAIL line: connected over which transport, the round trip's time, or why not.
Check check_peer(const transport::Endpoint& peer, const PeerOptions& options);

// Serves echo connections one after another until `connections` have ended (0: forever).
// Prints "listening on host:port over <transport>" to stdout once ready.
Status run_echo_listener(const transport::Endpoint& where, const PeerOptions& options,
                         uint32_t connections);

// The pre-shared key in `path` (trailing newlines dropped); Errc::invalid_argument saying
// what is wrong when it cannot be read or is empty.
Result<std::string> read_key_file(const std::string& path);

// "host:port" -> Endpoint; Errc::invalid_argument saying what is wrong.
Result<transport::Endpoint> parse_endpoint(const std::string& text);

}  // namespace rdmarepl::doctor
