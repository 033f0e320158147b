// A minimal JSON scanner for the tuning model container: splits an object into its members
// without copying, so that the embedded XGBoost models are handed to XGBoost byte for byte.
// Internal to src/tuning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::tuning::json {

struct Member {
  std::string_view key;    // without quotes; escapes are not decoded
  std::string_view value;  // the raw text of the value
};

// The members of the object that `text` holds (surrounding whitespace allowed). Errors say
// where the text stops making sense, e.g. "truncated at byte 812".
Result<std::vector<Member>> object_members(std::string_view text);

// The raw text of each element of the array that `text` holds.
Result<std::vector<std::string_view>> array_elements(std::string_view text);

// Elements of an array of plain strings (no escapes).
Result<std::vector<std::string>> string_array(std::string_view text);

// The value of `key` in `members`, or an empty view.
std::string_view find(const std::vector<Member>& members, std::string_view key);

}  // namespace rdmarepl::tuning::json
