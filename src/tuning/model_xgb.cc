// TuningModel on the XGBoost C API. The model file is a small JSON container that holds
// the two XGBoost models verbatim (see docs/tuning.md, "Model file").
#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "forest.h"
#include "json_scan.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/model.h"

namespace rdmarepl::tuning {

namespace {

constexpr std::string_view kFormat = "rdmarepl-tuning-model";
constexpr int kFormatVersion = 1;

// Inference config for XGBoosterPredictFromDense. XGBoost 1.7 rejects the call without
// "cache_id" although its documentation does not list the key.
constexpr const char* kPredictConfig =
    R"({"type":0,"training":false,"iteration_begin":0,"iteration_end":0,)"
    R"("strict_shape":false,"missing":NaN,"cache_id":0})";

Error xgb_error(std::string_view what) {
  return Error(Errc::io_error, fmt::format("XGBoost {} failed: {}", what, XGBGetLastError()));
}

class Booster {
 public:
  Booster() = default;
  Booster(Booster&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Booster& operator=(Booster&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() { reset(); }

  Status create(const DMatrixHandle* cache, bst_ulong n) {
    reset();
    if (XGBoosterCreate(cache, n, &h_) != 0) return xgb_error("booster creation");
    return {};
  }
  Status set(const char* name, const std::string& value) {
    if (XGBoosterSetParam(h_, name, value.c_str()) != 0) {
      return xgb_error(fmt::format("setting parameter {}={}", name, value));
    }
    return {};
  }
  [[nodiscard]] BoosterHandle get() const noexcept { return h_; }

 private:
  void reset() noexcept {
    if (h_ != nullptr) XGBoosterFree(h_);
    h_ = nullptr;
  }
  BoosterHandle h_ = nullptr;
};

class DMatrix {
 public:
  DMatrix() = default;
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  ~DMatrix() {
    if (h_ != nullptr) XGDMatrixFree(h_);
  }
  Status create(const std::vector<float>& x, size_t rows, const std::vector<float>& label) {
    if (XGDMatrixCreateFromMat(x.data(), rows, kNumFeatures,
                               std::numeric_limits<float>::quiet_NaN(), &h_) != 0) {
      return xgb_error("DMatrix creation");
    }
    if (XGDMatrixSetFloatInfo(h_, "label", label.data(), rows) != 0) {
      return xgb_error("setting labels");
    }
    return {};
  }
  [[nodiscard]] DMatrixHandle get() const noexcept { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

struct Encoded {
  std::vector<float> x;
  std::vector<float> y_tp;
  std::vector<float> y_p99;
  size_t rows = 0;
};

Result<Encoded> encode(std::span<const Sample> samples) {
  if (samples.empty()) {
    return Error(Errc::invalid_argument, "no samples to train on: supply a non-empty dataset");
  }
  Encoded e;
  e.rows = samples.size();
  e.x.resize(e.rows * kNumFeatures);
  e.y_tp.reserve(e.rows);
  e.y_p99.reserve(e.rows);
  for (size_t i = 0; i < e.rows; ++i) {
    const Sample& s = samples[i];
    encode_features(s.observation, s.observed_under, s.knobs, &e.x[i * kNumFeatures]);
    if (!(s.outcome.bytes_per_s >= 0) || !(s.outcome.latency_p99_us >= 0) ||
        !std::isfinite(s.outcome.bytes_per_s) || !std::isfinite(s.outcome.latency_p99_us)) {
      return Error(Errc::invalid_argument,
                   fmt::format("sample {} has an invalid outcome (bytes/s={}, p99={} us): outcomes "
                               "must be finite and >= 0",
                               i, s.outcome.bytes_per_s, s.outcome.latency_p99_us));
    }
    e.y_tp.push_back(static_cast<float>(std::log1p(s.outcome.bytes_per_s)));
    e.y_p99.push_back(static_cast<float>(std::log1p(s.outcome.latency_p99_us)));
  }
  return e;
}

float mean(const std::vector<float>& v) {
  double s = 0;
  for (float f : v) s += f;
  return static_cast<float>(s / static_cast<double>(v.size()));
}

Status set_tree_params(Booster& b, int max_depth, double eta, double subsample, uint64_t seed,
                       int nthread) {
  RDMAREPL_TRY(b.set("objective", "reg:squarederror"));
  RDMAREPL_TRY(b.set("tree_method", "hist"));
  RDMAREPL_TRY(b.set("max_depth", std::to_string(max_depth)));
  RDMAREPL_TRY(b.set("eta", fmt::format("{}", eta)));
  RDMAREPL_TRY(b.set("subsample", fmt::format("{}", subsample)));
  RDMAREPL_TRY(b.set("seed", std::to_string(seed)));
  RDMAREPL_TRY(b.set("nthread", std::to_string(nthread)));
  return b.set("verbosity", "0");
}

Result<std::string> booster_json(const Booster& b) {
  bst_ulong len = 0;
  const char* data = nullptr;
  if (XGBoosterSaveModelToBuffer(b.get(), R"({"format":"json"})", &len, &data) != 0) {
    return xgb_error("model serialisation");
  }
  return std::string(data, len);
}

Result<Booster> booster_from_json(std::string_view json) {
  Booster b;
  RDMAREPL_TRY(b.create(nullptr, 0));
  if (XGBoosterLoadModelFromBuffer(b.get(), json.data(), json.size()) != 0) {
    return xgb_error("model loading");
  }
  // nthread is not part of a saved model: single-row inference is fastest on one thread.
  RDMAREPL_TRY(b.set("nthread", "1"));
  return b;
}

int boosted_rounds(const Booster& b) {
  int n = 0;
  if (XGBoosterBoostedRounds(b.get(), &n) != 0) return -1;
  return n;
}

}  // namespace

struct TuningModel::Impl {
  Booster tp;
  Booster p99;
  uint64_t version = 1;
  // Native copies of the trees for fast prediction; empty when they could not be made.
  std::optional<Forest> forest_tp;
  std::optional<Forest> forest_p99;

  void compile(std::string_view tp_json, std::string_view p99_json) {
    auto a = Forest::parse(tp_json, kNumFeatures);
    auto b = Forest::parse(p99_json, kNumFeatures);
    if (a && b) {
      forest_tp = std::move(*a);
      forest_p99 = std::move(*b);
    } else {
      forest_tp.reset();
      forest_p99.reset();
      log::debug("tuning model: predicting through XGBoost: {}",
                 (a ? b.error() : a.error()).message());
    }
  }
};

bool TuningModel::available() noexcept {
  return true;
}

TuningModel::TuningModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningModel::TuningModel(TuningModel&&) noexcept = default;
TuningModel& TuningModel::operator=(TuningModel&&) noexcept = default;
TuningModel::~TuningModel() = default;

uint64_t TuningModel::version() const noexcept {
  return impl_->version;
}
int TuningModel::trees_per_target() const noexcept {
  return boosted_rounds(impl_->tp);
}

Result<TuningModel> TuningModel::train(std::span<const Sample> samples, const TrainOptions& opt) {
  auto enc = encode(samples);
  if (!enc) return std::move(enc).error();
  if (opt.rounds < 1 || opt.max_depth < 1 || !(opt.eta > 0) || !(opt.subsample > 0) ||
      opt.subsample > 1) {
    return Error(Errc::invalid_argument,
                 fmt::format("bad training options (rounds={} max_depth={} eta={} subsample={}): "
                             "need rounds, max_depth >= 1, eta > 0, 0 < subsample <= 1",
                             opt.rounds, opt.max_depth, opt.eta, opt.subsample));
  }
  auto impl = std::make_unique<Impl>();
  for (int t = 0; t < 2; ++t) {
    const auto& y = t == 0 ? enc->y_tp : enc->y_p99;
    Booster& b = t == 0 ? impl->tp : impl->p99;
    DMatrix d;
    RDMAREPL_TRY(d.create(enc->x, enc->rows, y));
    DMatrixHandle h = d.get();
    RDMAREPL_TRY(b.create(&h, 1));
    RDMAREPL_TRY(set_tree_params(b, opt.max_depth, opt.eta, opt.subsample, opt.seed,
                                 opt.nthread < 1 ? 1 : opt.nthread));
    RDMAREPL_TRY(b.set("base_score", fmt::format("{}", mean(y))));
    for (int i = 0; i < opt.rounds; ++i) {
      if (XGBoosterUpdateOneIter(b.get(), i, h) != 0) return xgb_error("training round");
    }
    RDMAREPL_TRY(b.set("nthread", "1"));
  }
  auto tp_json = booster_json(impl->tp);
  if (!tp_json) return std::move(tp_json).error();
  auto p99_json = booster_json(impl->p99);
  if (!p99_json) return std::move(p99_json).error();
  impl->compile(*tp_json, *p99_json);
  return TuningModel(std::move(impl));
}

Result<std::string> TuningModel::to_json() const {
  auto tp = booster_json(impl_->tp);
  if (!tp) return std::move(tp).error();
  auto p99 = booster_json(impl_->p99);
  if (!p99) return std::move(p99).error();
  std::string features;
  for (auto n : feature_names()) {
    if (!features.empty()) features += ',';
    features += fmt::format("\"{}\"", n);
  }
  return fmt::format(
      "{{\"format\":\"{}\",\"format_version\":{},\"model_version\":{},"
      "\"target_transform\":\"log1p\",\"features\":[{}],\n\"bytes_per_s\":{},\n"
      "\"latency_p99_us\":{}}}\n",
      kFormat, kFormatVersion, impl_->version, features, *tp, *p99);
}

Result<TuningModel> TuningModel::from_json(std::string_view text, std::string_view origin) {
  auto bad = [&](std::string_view why) {
    return Error(Errc::corrupt,
                 fmt::format("tuning model {} is not a usable model: {}; retrain it with "
                             "`rdmarepl-tune train` or restore the shipped default model",
                             origin, why));
  };
  auto members = json::object_members(text);
  if (!members) return bad(members.error().message());
  if (json::find(*members, "format") != fmt::format("\"{}\"", kFormat)) {
    return bad(fmt::format("the \"format\" member is not \"{}\"", kFormat));
  }
  if (json::find(*members, "format_version") != std::to_string(kFormatVersion)) {
    return bad(fmt::format("format_version is {}, this build reads {}",
                           json::find(*members, "format_version"), kFormatVersion));
  }
  if (json::find(*members, "target_transform") != "\"log1p\"") {
    return bad("target_transform is not \"log1p\"");
  }
  auto feats = json::string_array(json::find(*members, "features"));
  if (!feats) return bad(fmt::format("bad features list: {}", feats.error().message()));
  const auto& names = feature_names();
  bool same = feats->size() == names.size();
  for (size_t i = 0; same && i < names.size(); ++i) same = (*feats)[i] == names[i];
  if (!same) {
    return bad(fmt::format("it was trained on {} features that differ from this build's {}",
                           feats->size(), names.size()));
  }
  auto impl = std::make_unique<Impl>();
  std::string_view ver = json::find(*members, "model_version");
  try {
    impl->version = std::stoull(std::string(ver));
  } catch (const std::exception&) {
    return bad(fmt::format("model_version '{}' is not a number", ver));
  }
  for (int t = 0; t < 2; ++t) {
    const char* key = t == 0 ? "bytes_per_s" : "latency_p99_us";
    std::string_view blob = json::find(*members, key);
    if (blob.empty() || blob.front() != '{')
      return bad(fmt::format("member \"{}\" is missing", key));
    auto b = booster_from_json(blob);
    if (!b) return bad(fmt::format("model \"{}\": {}", key, b.error().message()));
    (t == 0 ? impl->tp : impl->p99) = std::move(*b);
  }
  if (boosted_rounds(impl->tp) < 1 || boosted_rounds(impl->p99) < 1) {
    return bad("a model has no trees");
  }
  impl->compile(json::find(*members, "bytes_per_s"), json::find(*members, "latency_p99_us"));
  return TuningModel(std::move(impl));
}

Result<TuningModel> TuningModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(Errc::not_found,
                 fmt::format("tuning model file '{}' cannot be opened: check the path, set "
                             "RDMAREPL_TUNING_MODEL, or train one with `rdmarepl-tune train`",
                             path));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return from_json(buf.str(), fmt::format("file '{}'", path));
}

Status TuningModel::save(const std::string& path) const {
  auto json = to_json();
  if (!json) return std::move(json).error();
  // Write beside the target and rename, so a crash never leaves a half-written model.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << *json;
    out.flush();
    if (!out) {
      return Error(Errc::io_error, fmt::format("writing tuning model '{}' failed: check the "
                                               "directory exists, is writable and has space",
                                               tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return errno_error(errno, fmt::format("renaming '{}' to '{}'", tmp, path));
  }
  return {};
}

Result<TuningModel> TuningModel::clone() const {
  auto json = to_json();
  if (!json) return std::move(json).error();
  return from_json(*json, "copy");
}

Status TuningModel::predict(const float* features, size_t rows, Prediction* out,
                            Engine engine) const {
  if (rows == 0) return {};
  if (engine == Engine::native && impl_->forest_tp && impl_->forest_p99) {
    for (size_t i = 0; i < rows; ++i) {
      const float* row = features + i * kNumFeatures;
      double tp = std::expm1(static_cast<double>(impl_->forest_tp->predict(row)));
      double p99 = std::expm1(static_cast<double>(impl_->forest_p99->predict(row)));
      out[i].bytes_per_s = tp < 0 ? 0 : tp;
      out[i].latency_p99_us = p99 < 0 ? 0 : p99;
    }
    return {};
  }
  std::string iface =
      fmt::format(R"({{"data":[{},true],"shape":[{},{}],"typestr":"<f4","version":3}})",
                  reinterpret_cast<uintptr_t>(features), rows, kNumFeatures);
  for (int t = 0; t < 2; ++t) {
    const Booster& b = t == 0 ? impl_->tp : impl_->p99;
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* res = nullptr;
    if (XGBoosterPredictFromDense(b.get(), iface.c_str(), kPredictConfig, nullptr, &shape, &dim,
                                  &res) != 0) {
      return xgb_error("prediction");
    }
    for (size_t i = 0; i < rows; ++i) {
      double v = std::expm1(static_cast<double>(res[i]));
      v = v < 0 ? 0 : v;
      if (t == 0) {
        out[i].bytes_per_s = v;
      } else {
        out[i].latency_p99_us = v;
      }
    }
  }
  return {};
}

Status TuningModel::update(std::span<const Sample> samples, const UpdateOptions& opt) {
  auto enc = encode(samples);
  if (!enc) return std::move(enc).error();
  // Work on a copy and swap it in only when every step succeeded.
  auto copy = clone();
  if (!copy) return std::move(copy).error();
  for (int t = 0; t < 2; ++t) {
    Booster& b = t == 0 ? copy->impl_->tp : copy->impl_->p99;
    DMatrix d;
    RDMAREPL_TRY(d.create(enc->x, enc->rows, t == 0 ? enc->y_tp : enc->y_p99));
    RDMAREPL_TRY(set_tree_params(b, opt.max_depth, opt.eta, 1.0, 1, 1));
    int rounds = boosted_rounds(b);
    if (rounds < 0) return xgb_error("counting trees");
    bool refresh = opt.mode == UpdateMode::refresh_leaves || rounds + opt.rounds > opt.max_trees;
    if (refresh) {
      RDMAREPL_TRY(b.set("process_type", "update"));
      RDMAREPL_TRY(b.set("updater", "refresh"));
      RDMAREPL_TRY(b.set("refresh_leaf", "1"));
      for (int i = 0; i < rounds; ++i) {
        if (XGBoosterUpdateOneIter(b.get(), i, d.get()) != 0) return xgb_error("leaf refresh");
      }
    } else {
      for (int i = 0; i < opt.rounds; ++i) {
        if (XGBoosterUpdateOneIter(b.get(), rounds + i, d.get()) != 0) {
          return xgb_error("boosting round");
        }
      }
    }
  }
  // Drop the training configuration (process_type=update ...) by a round trip through the
  // serialised form, so the next update starts from clean parameters.
  auto fresh = copy->clone();
  if (!fresh) return std::move(fresh).error();
  fresh->impl_->version = impl_->version + 1;
  *this = std::move(*fresh);
  return {};
}

}  // namespace rdmarepl::tuning
