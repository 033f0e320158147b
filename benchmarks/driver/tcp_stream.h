// The plain TCP baseline: one process streams records (key + value bytes, one write() per
// record, no framing, no checksum, no acknowledgements) to another over a loopback TCP
// socket. It is the most a replication protocol over the same sockets could hope for, so
// rdmarepl-bench prints the replicated bandwidth as a share of it.
#pragma once

#include <cstdint>
#include <optional>

#include "rdmarepl/core/result.h"

namespace rdmarepl::bench {

struct StreamResult {
  uint64_t records = 0;
  uint64_t bytes = 0;
  double seconds = 0;  // first write to the receiver confirming it has every byte
  double ops_per_sec = 0;
  double mb_per_sec = 0;
  double cpu_seconds = 0;  // sender + receiver
  bool verified = false;   // the receiver counted exactly the bytes sent
};

// Starts the receiver process (this executable with --role tcp-sink) and streams to it.
Result<StreamResult> run_tcp_stream(uint64_t records, uint32_t record_bytes);

// The receiver's body when argv says `--role tcp-sink`; otherwise nothing.
std::optional<int> run_tcp_sink_if_requested(int argc, char** argv);

}  // namespace rdmarepl::bench
