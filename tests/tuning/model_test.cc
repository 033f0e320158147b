#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/xgboost_tuner.h"
#include "tuning_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;
using rdmarepl::tuning::testing::copy_of_small_model;
using rdmarepl::tuning::testing::skip_without_xgboost;
using rdmarepl::tuning::testing::small_dataset;
using rdmarepl::tuning::testing::small_model;

namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("rdmarepl_") + std::to_string(getpid()) + "_" + name))
      .string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::vector<float> rows_of(std::span<const Sample> samples) {
  std::vector<float> x(samples.size() * kNumFeatures);
  for (size_t i = 0; i < samples.size(); ++i) {
    encode_features(samples[i].observation, samples[i].observed_under, samples[i].knobs,
                    &x[i * kNumFeatures]);
  }
  return x;
}

std::vector<Prediction> predict(const TuningModel& m, std::span<const Sample> samples) {
  auto x = rows_of(samples);
  std::vector<Prediction> p(samples.size());
  REQUIRE(m.predict(x.data(), samples.size(), p.data()).ok());
  return p;
}

}  // namespace

TEST_CASE("model save/load round trip predicts identically", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  std::string path = temp_path("roundtrip.json");
  REQUIRE(small_model().save(path).ok());
  auto loaded = TuningModel::load(path);
  REQUIRE(loaded.ok());
  std::span<const Sample> probe(small_dataset().data(), 200);
  auto a = predict(small_model(), probe);
  auto b = predict(*loaded, probe);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].bytes_per_s == b[i].bytes_per_s);  // bit-identical, not approximately equal
    CHECK(a[i].latency_p99_us == b[i].latency_p99_us);
  }
  auto x = rows_of(probe);
  std::vector<Prediction> c(probe.size()), d(probe.size());
  REQUIRE(small_model().predict(x.data(), probe.size(), c.data(), Engine::xgboost).ok());
  REQUIRE(loaded->predict(x.data(), probe.size(), d.data(), Engine::xgboost).ok());
  for (size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].bytes_per_s == d[i].bytes_per_s);
    CHECK(c[i].latency_p99_us == d[i].latency_p99_us);
  }
  CHECK(loaded->version() == small_model().version());
  CHECK(loaded->trees_per_target() == small_model().trees_per_target());
  std::remove(path.c_str());
}

TEST_CASE("native tree evaluation matches XGBoost's own predictions", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  std::vector<Sample> probe(small_dataset().begin(), small_dataset().begin() + 400);
  for (size_t i = 0; i < probe.size(); i += 3) {  // missing inputs take the default branch
    probe[i].observation.cpu_utilization.reset();
    probe[i].observation.device = DeviceRates{};
  }
  auto x = rows_of(probe);
  std::vector<Prediction> native(probe.size()), xgb(probe.size());
  REQUIRE(small_model().predict(x.data(), probe.size(), native.data(), Engine::native).ok());
  REQUIRE(small_model().predict(x.data(), probe.size(), xgb.data(), Engine::xgboost).ok());
  for (size_t i = 0; i < probe.size(); ++i) {
    CHECK(native[i].bytes_per_s == Approx(xgb[i].bytes_per_s).epsilon(1e-4));
    CHECK(native[i].latency_p99_us == Approx(xgb[i].latency_p99_us).epsilon(1e-4));
  }
}

TEST_CASE("model predictions track the synthetic truth", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  auto held = generate_dataset(500, 4242, KnobBounds{});  // a seed not used for training
  auto r = evaluate(small_model(), held);
  REQUIRE(r.ok());
  // Log-space training: the typical throughput error is a small share of the value.
  CHECK(r->mape_bytes_per_s < 0.3);
}

TEST_CASE("a missing, truncated or corrupt model file is rejected with a clear error",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  std::string good = temp_path("good.json");
  REQUIRE(small_model().save(good).ok());
  std::string text = read_all(good);
  std::string bad = temp_path("bad.json");

  SECTION("missing") {
    auto m = TuningModel::load("/nonexistent/dir/model.json");
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().is(Errc::not_found));
    CHECK_THAT(m.error().message(), Catch::Contains("/nonexistent/dir/model.json"));
  }
  SECTION("truncated") {
    write_all(bad, text.substr(0, text.size() / 2));
    auto m = TuningModel::load(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().is(Errc::corrupt));
    CHECK_THAT(m.error().message(), Catch::Contains(bad) && Catch::Contains("truncated"));
  }
  SECTION("empty") {
    write_all(bad, "");
    auto m = TuningModel::load(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().is(Errc::corrupt));
  }
  SECTION("not a model") {
    write_all(bad, R"({"hello":"world"})");
    auto m = TuningModel::load(bad);
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message(), Catch::Contains("format"));
  }
  SECTION("a corrupted tree inside an otherwise valid container") {
    auto at = text.find("\"split_indices\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, 15, "\"xplit_indices\"");
    write_all(bad, text);
    auto m = TuningModel::load(bad);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().is(Errc::corrupt));
    CHECK_THAT(m.error().message(), Catch::Contains("XGBoost"));
  }
  SECTION("trained for a different feature layout") {
    auto at = text.find("\"window_s\"");
    text.replace(at, 10, "\"window_x\"");
    write_all(bad, text);
    auto m = TuningModel::load(bad);
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message(), Catch::Contains("features"));
  }
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("online update lowers the error on shifted data and bumps the version",
          "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  // The system changed: records cost three times the CPU and the link is half as fast.
  CostModel shifted;
  shifted.per_record_s *= 3;
  shifted.per_batch_s *= 3;
  shifted.link_bytes_per_s /= 2;
  auto live = generate_dataset(1000, 7, KnobBounds{}, shifted);
  auto probe = generate_dataset(500, 8, KnobBounds{}, shifted);

  for (UpdateMode mode : {UpdateMode::add_trees, UpdateMode::refresh_leaves}) {
    TuningModel m = copy_of_small_model();
    auto before = evaluate(m, probe);
    REQUIRE(before.ok());
    UpdateOptions u;
    u.mode = mode;
    u.rounds = 10;
    REQUIRE(m.update(live, u).ok());
    auto after = evaluate(m, probe);
    REQUIRE(after.ok());
    INFO("mode " << static_cast<int>(mode) << ": log RMSE throughput "
                 << before->log_rmse_bytes_per_s << " -> " << after->log_rmse_bytes_per_s
                 << ", p99 " << before->log_rmse_p99_us << " -> " << after->log_rmse_p99_us
                 << "; MAPE throughput " << before->mape_bytes_per_s << " -> "
                 << after->mape_bytes_per_s << ", p99 " << before->mape_p99_us << " -> "
                 << after->mape_p99_us);
    CHECK(after->log_rmse_bytes_per_s < before->log_rmse_bytes_per_s);
    CHECK(after->log_rmse_p99_us < before->log_rmse_p99_us);
    CHECK(after->mape_bytes_per_s < before->mape_bytes_per_s);
    CHECK(m.version() == small_model().version() + 1);
    CHECK(m.trees_per_target() ==
          small_model().trees_per_target() + (mode == UpdateMode::add_trees ? 10 : 0));
  }
}

TEST_CASE("a failed update leaves the model as it was", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  TuningModel m = copy_of_small_model();
  std::vector<Sample> bad(3, small_dataset()[0]);
  bad[1].outcome.bytes_per_s = -5;
  Status s = m.update(bad, UpdateOptions{});
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message(), Catch::Contains("outcome"));
  // A failure inside XGBoost, after the work on the copy has begun.
  UpdateOptions broken;
  broken.max_depth = -3;
  Status x = m.update(small_dataset(), broken);
  REQUIRE_FALSE(x.ok());
  CHECK_THAT(x.error().message(), Catch::Contains("XGBoost"));
  CHECK(m.version() == small_model().version());
  std::span<const Sample> probe(small_dataset().data(), 50);
  auto a = predict(small_model(), probe);
  auto b = predict(m, probe);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bytes_per_s == b[i].bytes_per_s);
}

TEST_CASE("the synthetic test model fits synthetic data", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  if (!std::filesystem::exists(RDMAREPL_TEST_SOURCE_MODEL)) {
    WARN("skipped: no synthetic test model at " RDMAREPL_TEST_SOURCE_MODEL);
    return;
  }
  auto m = TuningModel::load(RDMAREPL_TEST_SOURCE_MODEL);
  REQUIRE(m.ok());
  CHECK(m->trees_per_target() > 0);
  auto r = evaluate(*m, generate_dataset(300, 99, KnobBounds{}));
  REQUIRE(r.ok());
  CHECK(r->mape_bytes_per_s < 0.3);
}

TEST_CASE("the shipped default model loads and predicts", "[tuning][xgboost]") {
  if (skip_without_xgboost()) return;
  if (!std::filesystem::exists(RDMAREPL_TEST_SHIPPED_MODEL)) {
    WARN("skipped: no shipped model at " RDMAREPL_TEST_SHIPPED_MODEL);
    return;
  }
  // Trained on measured sweeps (docs/tuning.md), so no error bound on synthetic rows: only
  // that it loads and gives positive, finite predictions for any feature row.
  auto m = TuningModel::load(RDMAREPL_TEST_SHIPPED_MODEL);
  REQUIRE(m.ok());
  CHECK(m->trees_per_target() > 0);
  const auto rows = generate_dataset(50, 7, KnobBounds{});
  for (const auto& p : predict(*m, rows)) {
    CHECK(std::isfinite(p.bytes_per_s));
    CHECK(std::isfinite(p.latency_p99_us));
    CHECK(p.bytes_per_s >= 0);
    CHECK(p.latency_p99_us >= 0);
  }
}
