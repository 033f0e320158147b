#include "rdmarepl/tuning/lstm_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/tuning/features.h"

namespace rdmarepl::tuning {

namespace {

// docs/tuning.md, "The LSTM model": a 44-byte header, the floats, a CRC32C; big-endian.
constexpr char kMagic[8] = {'R', 'D', 'R', 'L', 'S', 'T', 'M', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 44;
constexpr size_t kStepFeatures = kCandidateOffset;  // a row without its candidate part
constexpr size_t kKnobs = kNumKnobFeatures;
constexpr size_t kKnobsInForce = kKnobsInForceOffset;
constexpr uint32_t kMaxHidden = 256, kMaxSteps = 64, kMaxHeadHidden = 256;

// CRC32C of the feature names joined by ',': a file trained on another layout is refused.
uint32_t layout_fingerprint() {
  std::string names;
  for (auto n : feature_names()) {
    if (!names.empty()) names += ',';
    names += n;
  }
  return crc32c::value(names.data(), names.size());
}

float sigmoid(float x) noexcept {
  return 1.0f / (1.0f + std::exp(-x));
}

float log_feature(float x) noexcept {
  return std::log1p(std::max(x, 0.0f));
}

// out[r] = b[r] + sum_c wt[c * rows + r] * x[c] for r < rows: the weights transposed
// (column-major), so that the inner loop runs over contiguous outputs and vectorises.
void affine(const float* wt, const float* b, const float* x, size_t rows, size_t cols,
            float* out) noexcept {
  std::copy_n(b, rows, out);
  for (size_t c = 0; c < cols; ++c) {
    const float xc = x[c];
    const float* w = wt + c * rows;
    for (size_t r = 0; r < rows; ++r) out[r] += w[r] * xc;
  }
}

// The file stores row-major rows x cols matrices (PyTorch's layout); affine() wants them
// transposed.
std::vector<float> transposed(const std::vector<float>& w, size_t rows, size_t cols) {
  std::vector<float> t(w.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) t[c * rows + r] = w[r * cols + c];
  return t;
}

class Reader {
 public:
  Reader(std::span<const std::byte> b, std::string_view origin) : b_(b), origin_(origin) {}
  uint32_t u32(size_t at) const { return load_be32(b_.data() + at); }
  // Reads `n` floats from the float area into `out`.
  void floats(size_t n, std::vector<float>& out) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i, pos_ += 4)
      out[i] = std::bit_cast<float>(load_be32(b_.data() + pos_));
  }
  Error bad(std::string_view what) const {
    return Error(Errc::corrupt, fmt::format("LSTM model '{}': {}; retrain it with "
                                            "tools/rdmarepl-tune/train_lstm.py (docs/tuning.md)",
                                            origin_, what));
  }
  size_t pos_ = kHeaderBytes;

 private:
  std::span<const std::byte> b_;
  std::string_view origin_;
};

}  // namespace

Result<LstmModel> LstmModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(Errc::not_found, fmt::format("cannot open LSTM model '{}': {}; train one with "
                                              "tools/rdmarepl-tune/train_lstm.py or set "
                                              "model_path",
                                              path, std::strerror(errno)));
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(std::as_bytes(std::span<const char>(raw)), path);
}

Result<LstmModel> LstmModel::parse(std::span<const std::byte> b, std::string_view origin) {
  Reader r(b, origin);
  if (b.size() < kHeaderBytes + 4) return r.bad(fmt::format("{} bytes is too short", b.size()));
  if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0)
    return r.bad("not an LSTM model file (bad magic)");
  const uint32_t crc = load_be32(b.data() + b.size() - 4);
  if (crc != crc32c::value(b.data(), b.size() - 4))
    return r.bad("checksum mismatch: the file is damaged or truncated");
  if (r.u32(8) != kFormatVersion)
    return r.bad(
        fmt::format("format version {} (this library reads {})", r.u32(8), kFormatVersion));
  LstmModel m;
  const uint32_t in = r.u32(12), head_in = r.u32(24);
  m.hidden_ = r.u32(16);
  m.steps_ = r.u32(20);
  m.head_hidden_ = r.u32(28);
  if (r.u32(32) != layout_fingerprint())
    return r.bad("trained for another feature layout (features.h changed since)");
  m.version_ = r.u32(36);
  const size_t H = m.hidden_, M = m.head_hidden_;
  if (in != kStepFeatures || head_in != H + 2 * kKnobs || H == 0 || H > kMaxHidden ||
      m.steps_ == 0 || m.steps_ > kMaxSteps || M == 0 || M > kMaxHeadHidden)
    return r.bad(fmt::format("unsupported shape: {} inputs, hidden {}, {} steps, head {} -> {}", in,
                             H, m.steps_, head_in, M));
  const size_t want =
      2 * kStepFeatures + 4 * H * (kStepFeatures + H + 1) + M * (head_in + 1) + 2 * (M + 1) + 4;
  if (r.u32(40) != want || b.size() != kHeaderBytes + 4 * want + 4)
    return r.bad(fmt::format("{} floats in a file of {} bytes, the shape needs {}", r.u32(40),
                             b.size(), want));
  r.floats(kStepFeatures, m.mean_);
  r.floats(kStepFeatures, m.dev_);
  r.floats(4 * H * kStepFeatures, m.w_ih_);
  r.floats(4 * H * H, m.w_hh_);
  r.floats(4 * H, m.b_);
  r.floats(M * head_in, m.w1_);
  r.floats(M, m.b1_);
  r.floats(2 * M, m.w2_);
  r.floats(2, m.b2_);
  r.floats(2, m.out_mean_);
  r.floats(2, m.out_dev_);
  m.w_ih_ = transposed(m.w_ih_, 4 * H, kStepFeatures);
  m.w_hh_ = transposed(m.w_hh_, 4 * H, H);
  m.w1_ = transposed(m.w1_, M, head_in);
  m.w2_ = transposed(m.w2_, 2, M);
  for (float d : m.dev_)
    if (!(d > 0) || !std::isfinite(d)) return r.bad("a feature deviation is not positive");
  m.hist_.resize(m.steps_ * kStepFeatures);
  m.h_.resize(H);
  m.c_.resize(H);
  m.gates_.resize(4 * H);
  m.step_.resize(kStepFeatures);
  m.head_in_.resize(head_in);
  m.z_.resize(M);
  return m;
}

void LstmModel::standardise_step(const float* row, float* out) const noexcept {
  for (size_t i = 0; i < kStepFeatures; ++i) {
    const float x = row[i];
    out[i] = std::isnan(x) ? 0.0f : (log_feature(x) - mean_[i]) / dev_[i];
  }
}

void LstmModel::reset_history() noexcept {
  hist_len_ = 0;
  hist_start_ = 0;
  h_valid_ = false;
}

void LstmModel::observe(const float* row) noexcept {
  uint32_t slot;
  if (hist_len_ < steps_) {
    slot = (hist_start_ + hist_len_) % steps_;
    ++hist_len_;
  } else {
    slot = hist_start_;
    hist_start_ = (hist_start_ + 1) % steps_;
  }
  standardise_step(row, hist_.data() + size_t{slot} * kStepFeatures);
  h_valid_ = false;
}

// The history, oldest first, left-padded with its oldest window up to steps_ (as in
// training), through the LSTM from a zero state.
void LstmModel::run_sequence() noexcept {
  const size_t H = hidden_;
  std::fill(h_.begin(), h_.end(), 0.0f);
  std::fill(c_.begin(), c_.end(), 0.0f);
  for (uint32_t t = 0; t < steps_; ++t) {
    const uint32_t pad = steps_ - hist_len_;
    const uint32_t k = t < pad ? 0 : t - pad;
    const float* x = hist_.data() + size_t{(hist_start_ + k) % steps_} * kStepFeatures;
    affine(w_ih_.data(), b_.data(), x, 4 * H, kStepFeatures, gates_.data());
    for (size_t j = 0; j < H; ++j) {
      const float hj = h_[j];
      const float* w = w_hh_.data() + j * 4 * H;
      for (size_t g = 0; g < 4 * H; ++g) gates_[g] += w[g] * hj;
    }
    for (size_t j = 0; j < H; ++j) {
      const float i = sigmoid(gates_[j]);
      const float f = sigmoid(gates_[H + j]);
      const float g = std::tanh(gates_[2 * H + j]);
      const float o = sigmoid(gates_[3 * H + j]);
      c_[j] = f * c_[j] + i * g;
      h_[j] = o * std::tanh(c_[j]);
    }
  }
  h_valid_ = true;
}

Status LstmModel::predict(const float* rows, std::size_t n, Prediction* out) {
  if (n == 0) return {};
  if (hist_len_ == 0) observe(rows);  // no history: the first row's window alone
  if (!h_valid_) run_sequence();
  const size_t H = hidden_;
  std::copy(h_.begin(), h_.end(), head_in_.begin());
  const float* now =
      hist_.data() + size_t{(hist_start_ + hist_len_ - 1) % steps_} * kStepFeatures + kKnobsInForce;
  for (size_t r = 0; r < n; ++r) {
    const float* cand = rows + r * kNumFeatures + kStepFeatures;
    for (size_t k = 0; k < kKnobs; ++k) {
      const size_t f = kKnobsInForce + k;
      const float x = std::isnan(cand[k]) ? 0.0f : (log_feature(cand[k]) - mean_[f]) / dev_[f];
      head_in_[H + k] = x;
      head_in_[H + kKnobs + k] = x - now[k];
    }
    affine(w1_.data(), b1_.data(), head_in_.data(), head_hidden_, head_in_.size(), z_.data());
    for (float& v : z_) v = std::max(v, 0.0f);
    float y[2];
    affine(w2_.data(), b2_.data(), z_.data(), 2, head_hidden_, y);
    out[r].bytes_per_s = std::max(0.0, std::expm1(double{y[0]} * out_dev_[0] + out_mean_[0]));
    out[r].latency_p99_us = std::max(0.0, std::expm1(double{y[1]} * out_dev_[1] + out_mean_[1]));
  }
  return {};
}

std::string default_lstm_model_path() {
  if (const char* env = std::getenv("RDMAREPL_LSTM_MODEL"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
#ifdef RDMAREPL_INSTALLED_LSTM_MODEL
  if (std::filesystem::exists(RDMAREPL_INSTALLED_LSTM_MODEL, ec))
    return RDMAREPL_INSTALLED_LSTM_MODEL;
#endif
#ifdef RDMAREPL_SOURCE_LSTM_MODEL
  if (std::filesystem::exists(RDMAREPL_SOURCE_LSTM_MODEL, ec)) return RDMAREPL_SOURCE_LSTM_MODEL;
#endif
  return "share/rdmarepl/default_lstm_model.bin";
}

}  // namespace rdmarepl::tuning
