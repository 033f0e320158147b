// LstmModel: a sequence model over the last windows (one LSTM layer and a two-layer head)
// predicting the next window's throughput and p99 for candidate knob settings, the
// PerformanceModel of the "lstm" tuner (lstm_tuner.h). Trained offline with PyTorch by
// tools/rdmarepl-tune/train_lstm.py; the library runs its forward pass natively (no Python,
// no libtorch). File format and architecture: docs/tuning.md, "The LSTM model".
//
// Input of one step: the window's row (features.h) without its candidate part, each value
// x mapped to log1p(max(x, 0)) and standardised with the file's mean and deviation; a
// missing value (NaN) becomes 0, the mean. The head sees the last hidden state, the
// candidate's knobs (standardised like the knobs in force) and their difference from the
// knobs in force. Outputs are standardised log1p of bytes/s and of p99 in microseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/performance_model.h"

namespace rdmarepl::tuning {

class LstmModel final : public PerformanceModel {
 public:
  // Loads a file written by train_lstm.py. A missing, truncated or corrupt file (CRC32C), or
  // one written for another feature layout, is an error that names the file and the problem.
  static Result<LstmModel> load(const std::string& path);
  static Result<LstmModel> parse(std::span<const std::byte> bytes, std::string_view origin);

  [[nodiscard]] std::string_view kind() const noexcept override { return "lstm"; }
  // Appends a window to the history (the last `steps()` are kept).
  void observe(const float* row) noexcept override;
  // Predicts from the history; with none yet, from the first row's window alone.
  Status predict(const float* rows, std::size_t n, Prediction* out) override;
  [[nodiscard]] uint64_t version() const noexcept override { return version_; }

  void reset_history() noexcept override;
  [[nodiscard]] uint32_t steps() const noexcept { return steps_; }
  [[nodiscard]] uint32_t hidden() const noexcept { return hidden_; }

 private:
  LstmModel() = default;
  void standardise_step(const float* row, float* out) const noexcept;
  void run_sequence() noexcept;  // hidden state over the history into h_

  uint32_t steps_ = 0, hidden_ = 0, head_hidden_ = 0;
  uint64_t version_ = 0;
  std::vector<float> mean_, dev_;  // per step feature
  // Weights transposed at load (column-major, see affine()); gates in the order i, f, g, o.
  std::vector<float> w_ih_, w_hh_, b_;     // 4H x I, 4H x H, 4H
  std::vector<float> w1_, b1_, w2_, b2_;   // head: M x (H + 2 * knobs), M; 2 x M, 2
  std::vector<float> out_mean_, out_dev_;  // 2 each
  // History: up to steps_ standardised windows, oldest first (circular from hist_start_).
  std::vector<float> hist_;
  uint32_t hist_len_ = 0, hist_start_ = 0;
  bool h_valid_ = false;
  // Scratch, sized at load: no allocation per decision.
  std::vector<float> h_, c_, gates_, step_, head_in_, z_;
};

// The model file the lstm tuner loads by default: $RDMAREPL_LSTM_MODEL when set, else the
// installed share/rdmarepl/default_lstm_model.bin, else the copy in the source tree.
std::string default_lstm_model_path();

}  // namespace rdmarepl::tuning
