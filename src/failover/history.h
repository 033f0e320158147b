// A member's history: which leadership (epoch) wrote which seqs of its records, as a list
// of segments (epoch, first seq), oldest first, and whether it led since its store was last
// emptied. Kept in <dir>/history.json (docs/failover.md, "On-disk and coordinator formats").
// Two members' records agree up to seq s exactly when both say the same epoch wrote s.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::failover::detail {

struct History {
  std::vector<std::pair<uint64_t, uint64_t>> segments;  // (epoch, first seq)
  bool was_leader = false;

  // The epoch that wrote `seq` (0 for seq 0 or a seq before every segment).
  [[nodiscard]] uint64_t epoch_at(uint64_t seq) const noexcept;
  // The lowest seq in [1, upto] that this history and `other` give to different epochs
  // (where two members' records fork), 0 when they agree on all of them.
  [[nodiscard]] uint64_t first_difference(const History& other, uint64_t upto) const;
  [[nodiscard]] std::string to_json() const;
  static Result<History> from_json(const std::string& text);
  static Result<History> load(const std::string& path);  // empty when the file is absent
  Status save(const std::string& path) const;            // written aside, synced, renamed
};

}  // namespace rdmarepl::failover::detail
