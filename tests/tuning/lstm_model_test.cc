// The LSTM tuner's model: the native forward pass against PyTorch's numbers on a real
// held-out sweep, the model file's checks, the use of the history, and the tuner's
// guardrails around it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rdmarepl/tuning/dataset.h"
#include "rdmarepl/tuning/features.h"
#include "rdmarepl/tuning/lstm_tuner.h"
#include "rdmarepl/tuning/registry.h"
#include "rdmarepl/tuning/synthetic.h"

using namespace rdmarepl;
using namespace rdmarepl::tuning;

namespace {

LstmModel shipped() {
  auto m = LstmModel::load(RDMAREPL_TEST_LSTM_MODEL);
  INFO((m ? std::string() : m.error().message()));
  REQUIRE(m.ok());
  return std::move(*m);
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

// train_lstm.py --predictions: "bytes_per_s,p99_us" then one line per held-out row.
std::vector<Prediction> torch_predictions() {
  std::ifstream in(RDMAREPL_TEST_LSTM_PREDICTIONS);
  std::string line;
  std::getline(in, line);
  std::vector<Prediction> out;
  while (std::getline(in, line)) {
    Prediction p;
    std::istringstream cells(line);
    char comma = 0;
    cells >> p.bytes_per_s >> comma >> p.latency_p99_us;
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("lstm: the native forward pass gives PyTorch's predictions on a held-out sweep",
          "[tuning][lstm]") {
  LstmModel m = shipped();
  auto data = read_dataset(RDMAREPL_TEST_HELDOUT_DATA);
  REQUIRE(data.ok());
  const auto want = torch_predictions();
  REQUIRE(want.size() == data->size());
  REQUIRE(want.size() > 100);
  // The sweep has a log: the sync p99 input is exercised with real values.
  CHECK(std::count_if(data->begin(), data->end(), [](const Sample& s) {
          return s.observation.wal_sync_p99_us.has_value();
        }) > 100);
  std::vector<float> row(kNumFeatures);
  size_t restarts = 0;
  for (size_t i = 0; i < data->size(); ++i) {
    const Sample& s = (*data)[i];
    if (i == 0 || !(s.observed_under == (*data)[i - 1].knobs)) {
      m.reset_history();
      ++restarts;
    }
    encode_features(s.observation, s.observed_under, s.observed_under, row.data());
    m.observe(row.data());
    encode_candidate(s.knobs, row.data());
    Prediction p;
    REQUIRE(m.predict(row.data(), 1, &p).ok());
    INFO("row " << i);
    CHECK(p.bytes_per_s == Approx(want[i].bytes_per_s).epsilon(1e-3));
    CHECK(p.latency_p99_us == Approx(want[i].latency_p99_us).epsilon(1e-3));
  }
  CHECK(restarts >= 1);
  // evaluate_in_order() walks the rows the same way.
  auto r = evaluate_in_order(m, *data);
  REQUIRE(r.ok());
  CHECK(r->rows == data->size());
  CHECK(r->log_rmse_bytes_per_s > 0);
}

TEST_CASE("lstm: the prediction depends on the windows before the last", "[tuning][lstm]") {
  LstmModel m = shipped();
  auto data = read_dataset(RDMAREPL_TEST_HELDOUT_DATA);
  REQUIRE(data.ok());
  std::vector<float> last(kNumFeatures), other(kNumFeatures);
  const Sample& s = (*data)[20];
  encode_features(s.observation, s.observed_under, s.observed_under, last.data());
  // The same last window after two different histories: a slow one and a fast one.
  Observation slow = s.observation, fast = s.observation;
  slow.bytes_per_s /= 20;
  slow.latency_p99_us *= 20;
  fast.bytes_per_s *= 20;
  fast.latency_p99_us /= 20;
  Prediction after_slow, after_fast, alone;
  for (auto* o : {&slow, &fast}) {
    m.reset_history();
    encode_features(*o, s.observed_under, s.observed_under, other.data());
    for (int i = 0; i < 7; ++i) m.observe(other.data());
    m.observe(last.data());
    REQUIRE(m.predict(last.data(), 1, o == &slow ? &after_slow : &after_fast).ok());
  }
  CHECK(after_slow.bytes_per_s != Approx(after_fast.bytes_per_s).epsilon(1e-3));
  // With one window of history, the history is that window, padded.
  m.reset_history();
  REQUIRE(m.predict(last.data(), 1, &alone).ok());
  Prediction again;
  m.reset_history();
  for (int i = 0; i < 8; ++i) m.observe(last.data());
  REQUIRE(m.predict(last.data(), 1, &again).ok());
  CHECK(alone.bytes_per_s == Approx(again.bytes_per_s).epsilon(1e-6));
  CHECK(alone.latency_p99_us == Approx(again.latency_p99_us).epsilon(1e-6));
}

TEST_CASE("lstm: a damaged, truncated or foreign model file is refused with its reason",
          "[tuning][lstm]") {
  const auto good = file_bytes(RDMAREPL_TEST_LSTM_MODEL);
  REQUIRE(LstmModel::parse(good, "good").ok());
  auto flipped = good;
  flipped[good.size() / 2] ^= std::byte{1};
  auto r = LstmModel::parse(flipped, "flipped.bin");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::corrupt));
  CHECK_THAT(r.error().message(), Catch::Contains("flipped.bin") && Catch::Contains("checksum") &&
                                      Catch::Contains("train_lstm.py"));
  auto cut = std::vector<std::byte>(good.begin(), good.begin() + 40);
  CHECK_THAT(LstmModel::parse(cut, "cut").error().message(), Catch::Contains("too short"));
  auto foreign = good;
  foreign[0] = std::byte{'X'};
  CHECK_THAT(LstmModel::parse(foreign, "x").error().message(), Catch::Contains("magic"));
  auto missing = LstmModel::load("/nonexistent/lstm.bin");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().is(Errc::not_found));
}

TEST_CASE("lstm tuner: decisions stay inside the bounds and move one step at a time",
          "[tuning][lstm]") {
  KnobBounds b;
  b.batch_bytes = {16 * 1024, 512 * 1024, 4096};
  b.shards = {1, 4, 1};
  b.flush_delay_us = {10, 400, 10};
  ModelTunerOptions o;
  o.refresh_every = 0;
  LstmTuner t(shipped(), Knobs{}, b, 5000, o);
  CHECK(t.name() == "lstm");
  std::mt19937_64 rng(7);
  CostModel sim;
  Knobs prev = clamp(Knobs{}, b);
  for (int i = 0; i < 200; ++i) {
    Observation obs = sim.simulate(random_workload(rng), prev, &rng);
    Knobs k = t.decide(obs);
    INFO("decision " << i << ": " << to_string(prev) << " -> " << to_string(k));
    REQUIRE(validate(k, b).ok());
    CHECK(k.batch_bytes <= prev.batch_bytes * 2);
    CHECK(k.batch_bytes * 2 >= prev.batch_bytes);
    CHECK((k.shards <= prev.shards + 1 && k.shards + 1 >= prev.shards));
    prev = k;
  }
  CHECK(t.stats().decisions == 200);
  CHECK(t.stats().fallbacks == 0);
  // It learns offline only: live samples are not kept.
  t.learn(Sample{});
  CHECK(t.ring_size() == 0);
}

TEST_CASE("lstm tuner without a model file keeps the initial knobs and says why",
          "[tuning][lstm]") {
  TunerConfig c;
  c.model.model_path = "/nonexistent/lstm.bin";
  c.initial.batch_bytes = 64 * 1024;
  auto t = make_tuner("lstm", c);
  REQUIRE(t.ok());
  auto* lt = dynamic_cast<LstmTuner*>(t->get());
  REQUIRE(lt != nullptr);
  CHECK_FALSE(lt->has_model());
  REQUIRE(lt->last_error().has_value());
  CHECK_THAT(lt->last_error()->message(), Catch::Contains("/nonexistent/lstm.bin"));
  for (int i = 0; i < 5; ++i) CHECK(lt->decide(Observation{}).batch_bytes == 64 * 1024);
  CHECK(lt->stats().fallbacks == 5);
  // No model and none it can train: samples are kept for nothing, refresh says so.
  ModelTunerOptions o;
  o.refresh_every = 2;
  LstmTuner u(Knobs{}, KnobBounds{}, 500, [&] {
    ModelTunerOptions p = o;
    p.model_path = "/nonexistent/lstm.bin";
    return p;
  }());
  u.learn(Sample{});
  u.learn(Sample{});
  CHECK(u.stats().refresh_failures == 1);
  REQUIRE(u.last_error().has_value());
  CHECK_THAT(u.last_error()->message(), Catch::Contains("cannot train"));
}
