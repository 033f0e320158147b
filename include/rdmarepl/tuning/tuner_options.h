// The options of the built-in tuners, as plain values: what ChannelOptions::tuning and the
// tuner registry carry. Kept apart from the tuners themselves so that a store that includes
// the channel's options does not include the tuners (or anything of XGBoost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rdmarepl::tuning {

// The tuner ChannelOptions::tuning.tuner names by default.
inline constexpr std::string_view kDefaultTuner = "xgboost";

// The heuristic tuner (heuristic_tuner.h).
struct HeuristicOptions {
  // On a p99 above the target the batch shrinks by this factor (multiplicative decrease).
  double decrease_factor = 0.5;
  // Otherwise it grows by this many bounds.batch_bytes.step units (additive increase).
  uint32_t increase_steps = 4;
  // Above this CPU utilisation a shard is dropped: more threads would only contend.
  double cpu_high = 0.85;
  // Below this CPU utilisation a shard is added when latency is breached or batches queue up.
  double cpu_low = 0.5;
  // Queued batches per active shard above which the channel counts as backlogged.
  double queue_per_shard_high = 2.0;
};

// How a model-driven tuner's model learns from live samples (XGBoost: model.h; the LSTM
// learns offline only).
enum class UpdateMode {
  add_trees,       // further boosting rounds fitted to the new samples
  refresh_leaves,  // re-fit the leaf values of the existing trees; the model does not grow
};

struct UpdateOptions {
  UpdateMode mode = UpdateMode::add_trees;
  int rounds = 5;  // boosting rounds for add_trees
  double eta = 0.2;
  int max_depth = 6;
  // add_trees switches to refresh_leaves once a target has this many trees, which bounds the
  // decision cost of a long-running tuner.
  int max_trees = 150;
};

// The model-driven tuners, "xgboost" and "lstm" (model_tuner.h): their model file, the grid
// search's guardrails and online learning. One set serves any model.
struct ModelTunerOptions {
  // Model file; "" means the tuner's default (default_model_path(),
  // default_lstm_model_path()).
  std::string model_path;
  // Multiplicative step of batch size, flush delay, poll interval and pool size per decision.
  double max_factor = 2.0;
  // Predicted improvement (relative) needed to move at all: keeps the knobs from flapping
  // between candidates whose predictions differ by less than the model's error.
  double min_gain = 0.05;
  // Candidates whose predicted throughput is within this share of the best count as ties;
  // among ties the lowest predicted p99 wins.
  double tie_share = 0.02;
  // Revert a move when measured throughput < predicted * (1 - margin) or measured p99 >
  // predicted * (1 + margin), unless the outcome still beat the window before the move.
  double revert_margin = 0.3;
  int hold_after_revert = 5;
  // Online learning: live samples go into a ring of this capacity; every `refresh_every`
  // samples the model is updated from the ring (in the caller of learn(), i.e. the tuner's
  // thread). 0 disables online learning.
  std::size_t ring_capacity = 2048;
  std::size_t refresh_every = 256;
  UpdateOptions update;
};

}  // namespace rdmarepl::tuning
