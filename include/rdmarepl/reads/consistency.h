// What a remote read asks for and what it gets back (docs/reads.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "rdmarepl/replication/ticket.h"

namespace rdmarepl::reads {

// How fresh a read must be, chosen per read.
struct Consistency {
  enum class Kind : uint8_t {
    any = 0,       // what the replica has applied, however old
    at_least = 1,  // the replica has applied `ticket` (its seq in its shard): read-your-writes
    leader = 2,    // served by the leader's store
  };
  Kind kind = Kind::any;
  replication::Ticket ticket;         // at_least only
  std::chrono::milliseconds wait{0};  // at_least: how long the replica may wait for the ticket

  static Consistency any() noexcept { return {}; }
  static Consistency at_least(replication::Ticket t, std::chrono::milliseconds wait) noexcept {
    return Consistency{Kind::at_least, t, wait};
  }
  static Consistency leader() noexcept { return Consistency{Kind::leader, {}, {}}; }
};

enum class ReadStatus : uint8_t {
  found = 0,
  not_found = 1,
  behind = 2,  // at_least: the replica had not applied the ticket within the wait
};
std::string_view to_string(ReadStatus s) noexcept;

struct ReadResult {
  ReadStatus status = ReadStatus::not_found;
  std::string value;       // found only
  uint64_t behind_by = 0;  // behind only: how many writes of the ticket's shard were missing
};

}  // namespace rdmarepl::reads
