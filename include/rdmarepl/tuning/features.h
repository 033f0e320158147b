// Feature extraction: the fixed layout of the model input. A row is the observation of one
// window, the knobs that were in force during it, and a candidate knob setting; the model
// predicts the outcome of the next window under the candidate. Missing values are NaN.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "rdmarepl/tuning/knobs.h"
#include "rdmarepl/tuning/observation.h"

namespace rdmarepl::tuning {

inline constexpr std::size_t kNumFeatures = 32;
// A row is the observation, then the knobs in force, then the candidate knobs (6 each).
inline constexpr std::size_t kNumKnobFeatures = 6;
inline constexpr std::size_t kCandidateOffset = kNumFeatures - kNumKnobFeatures;
inline constexpr std::size_t kKnobsInForceOffset = kCandidateOffset - kNumKnobFeatures;

// Feature names in input order; they are also the dataset's CSV column names (docs/tuning.md).
// A model file records them, and loading a model with a different list is refused.
const std::array<std::string_view, kNumFeatures>& feature_names() noexcept;

// Writes kNumFeatures floats to `out`. Never allocates.
void encode_features(const Observation& observation, const Knobs& observed_under,
                     const Knobs& candidate, float* out) noexcept;

// Overwrites only the candidate-knob part of a row written by encode_features, so that a grid
// of candidates shares one observation encoding.
void encode_candidate(const Knobs& candidate, float* row) noexcept;

}  // namespace rdmarepl::tuning
