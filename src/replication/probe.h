// The operations probe of a follower's replication channel (docs/wire_format.md, "Probe"):
// `rdmarepl-doctor --peer` connects to a follower through the same listener, admission and
// pre-shared key as a leader, with a probe Hello instead of a leader Hello, sends one
// zero-length write-with-immediate and waits for the follower's answer (immediate + 1).
// The follower answers on its handshake thread and closes the connection: a probe never
// reaches install(), so it touches no store, session, buffer generation or epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

inline constexpr size_t kProbeHelloSize = 8;

// The probe Hello (app_data of the prober's bootstrap Hello).
std::string encode_probe_hello();
// Whether `bytes` carry the probe magic (whatever their version).
bool is_probe_hello(std::string_view bytes) noexcept;
// ok, or Errc::protocol_error naming `peer` (another version, a bad size or reserved field).
Status parse_probe_hello(std::string_view bytes, std::string_view peer);

// Follower side: waits until `deadline` for the prober's zero-length write-with-immediate
// on `c` and answers it with a zero-length write-with-immediate of imm + 1 (signaled, and
// its completion awaited, so that closing the connection afterwards cannot drop it).
Status answer_probe(transport::Connection& c, Deadline deadline);

// Prober side: sends `imm` and waits until `deadline` for imm + 1. "" on success, else why
// not.
std::string probe_round_trip(transport::Connection& c, uint32_t imm, Deadline deadline);

// Waits until `deadline` for a write-with-immediate carrying `imm` to arrive on `c`. "" on
// arrival; the failed completion's reason; or `on_timeout`. Also the doctor's echo check.
std::string await_imm(transport::Connection& c, uint32_t imm, Deadline deadline,
                      std::string_view on_timeout);

}  // namespace rdmarepl::replication::detail
