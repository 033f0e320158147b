// A client history of a key-value store and a linearizability checker for it: each key is
// a register (put sets it, get returns it or "absent"), keys are independent, so the history
// is checked key by key (P-compositionality) with Wing & Gong's search as Lowe improved it
// (a cache of (linearized set, register state) prunes repeated configurations).
//
// An operation whose outcome the client never learned (its leader died, the wait failed)
// has no return: it may take effect at any point after its call, or never. Such an
// operation is checked as returning after everything else, which allows both.
//
// write_porcupine_json() writes the same history as Porcupine's events
// (github.com/anishathalye/porcupine: {"ClientId", "Kind" (false: call, true: return),
// "Value", "Id"}) so that an outside checker can verify the same run.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::kvdemo {

inline constexpr uint64_t kNoReturn = std::numeric_limits<uint64_t>::max();

struct HistoryOp {
  uint32_t client = 0;
  bool write = false;  // put(key, value); else get(key)
  std::string key;
  std::string value;   // put: the value written; get: the value returned (when found)
  bool found = false;  // get: the key was present
  uint64_t call_ns = 0;
  uint64_t return_ns = kNoReturn;  // kNoReturn: the outcome is unknown
  std::string node;                // the member that served it
  uint64_t epoch = 0;              // the leadership that answered (0: unknown)
};

struct LinearizabilityResult {
  bool linearizable = true;
  uint64_t keys = 0;
  uint64_t operations = 0;
  // When not linearizable: the first key with no valid order, and what was read there.
  std::string key;
  std::string explanation;
};

// Checks `history` key by key. Gets that have no return are ignored (a read with unknown
// outcome says nothing).
LinearizabilityResult check_linearizable(const std::vector<HistoryOp>& history);

// The history as a JSON array of Porcupine events, in time order; operations without a
// return get their return event at the end.
Status write_porcupine_json(const std::vector<HistoryOp>& history, const std::string& path);

}  // namespace rdmarepl::kvdemo
