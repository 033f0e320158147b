// The highest leader epoch a follower accepted, and that leader's node id, kept in the
// follower's log directory so that a restart does not forget it (docs/wal_format.md,
// "Leader epoch file"): a deposed leader stays refused across the follower's restarts.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::replication::detail {

struct AcceptedLeader {
  uint64_t epoch = 0;
  std::string node_id;  // at most kMaxEpochNodeIdBytes
};

inline constexpr std::string_view kLeaderEpochFile = "leader-epoch";
inline constexpr uint32_t kLeaderEpochMagic = 0x52504C45;  // "RPLE"
inline constexpr uint16_t kLeaderEpochVersion = 1;
inline constexpr size_t kMaxEpochNodeIdBytes = 255;

std::vector<uint8_t> encode(const AcceptedLeader& l);
// False, with `why`, for bytes that are not one whole, intact file of this format.
bool decode(std::span<const uint8_t> bytes, AcceptedLeader& out, std::string& why);

// <dir>/leader-epoch: nullopt when there is none (a follower that never accepted a leader
// with a log, or a log from before the file existed); Errc::corrupt naming the file and the
// fix when it does not decode.
Result<std::optional<AcceptedLeader>> load_accepted_leader(const std::string& dir);
// Replaces it durably: written to leader-epoch.tmp, fsync'ed, renamed, then the directory
// fsync'ed; a crash leaves the old file or the new one, never a mix.
Status store_accepted_leader(const std::string& dir, const AcceptedLeader& l);

}  // namespace rdmarepl::replication::detail
