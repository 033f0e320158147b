// Forest: a regression tree ensemble read from XGBoost's JSON model format and evaluated
// natively. A decision predicts ~20 candidate rows; through the XGBoost C API each call costs
// tens of microseconds of fixed overhead (config parsing, thread set-up), which this avoids.
// Internal to src/tuning; tests check it against XGBoost's own predictions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::tuning {

class Forest {
 public:
  // Reads a gbtree model with numerical splits (what TuningModel trains). Anything else
  // (categorical splits, dart, a malformed tree) is an error.
  static Result<Forest> parse(std::string_view booster_json, std::size_t num_features);

  // The raw margin (base score + sum of leaves) for one row; NaN features follow the
  // default direction. Never allocates.
  [[nodiscard]] float predict(const float* row) const noexcept;
  [[nodiscard]] std::size_t trees() const noexcept { return roots_.size(); }

 private:
  struct Node {
    int32_t left;  // -1 for a leaf
    int32_t right;
    uint32_t feature;
    uint32_t default_left;
    float value;  // split threshold, or the leaf value
  };
  std::vector<Node> nodes_;
  std::vector<uint32_t> roots_;
  float base_score_ = 0;
};

}  // namespace rdmarepl::tuning
