// rdmarepl-tune: the training pipeline of the XGBoost tuner.
//
//   rdmarepl-tune generate --rows N [--seed S] --out DATASET.csv
//   rdmarepl-tune train --data DATASET.csv --out MODEL.json [--holdout F] [--rounds R]
//                       [--depth D] [--eta E] [--seed S] [--threads T]
//   rdmarepl-tune eval --data DATASET.csv --model MODEL.json
//
// The dataset format is documented in docs/tuning.md. Exit status: 0 success, 1 failure
// (with a message on stderr), 2 bad usage.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rdmarepl/tuning/dataset.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/synthetic.h"

namespace {

using namespace rdmarepl;
using namespace rdmarepl::tuning;

constexpr const char* kUsage =
    "usage:\n"
    "  rdmarepl-tune generate --rows N [--seed S] --out DATASET.csv\n"
    "      write N rows of synthetic training data (docs/tuning.md, \"Synthetic data\")\n"
    "  rdmarepl-tune train --data DATASET.csv --out MODEL.json [--holdout 0.2] [--rounds 60]\n"
    "                      [--depth 6] [--eta 0.2] [--seed 1] [--threads 1]\n"
    "      train on all but a held-out share of the rows, print the held-out error, save\n"
    "  rdmarepl-tune eval --data DATASET.csv --model MODEL.json\n"
    "      print the model's error on every row of the dataset\n";

struct Args {
  std::string command;
  std::map<std::string, std::string> opts;
};

int usage(const std::string& why) {
  std::fprintf(stderr, "rdmarepl-tune: %s\n%s", why.c_str(), kUsage);
  return 2;
}

int fail(const Error& e) {
  std::fprintf(stderr, "rdmarepl-tune: %s\n", e.message().c_str());
  return 1;
}

bool number(const Args& a, const std::string& key, double& out) {
  auto it = a.opts.find(key);
  if (it == a.opts.end()) return true;
  char* end = nullptr;
  out = std::strtod(it->second.c_str(), &end);
  return end != it->second.c_str() && *end == '\0';
}

void print_report(const char* what, const EvalReport& r) {
  std::printf("%s: %zu rows\n", what, r.rows);
  std::printf("  throughput  RMSE %.4g B/s  MAE %.4g B/s  MAPE %.2f%%\n", r.rmse_bytes_per_s,
              r.mae_bytes_per_s, 100 * r.mape_bytes_per_s);
  std::printf("  p99 latency RMSE %.4g us   MAE %.4g us   MAPE %.2f%%\n", r.rmse_p99_us,
              r.mae_p99_us, 100 * r.mape_p99_us);
  std::printf("  RMSE of log1p (what training minimises): throughput %.4f  p99 %.4f\n",
              r.log_rmse_bytes_per_s, r.log_rmse_p99_us);
}

int generate(const Args& a) {
  double rows = 0, seed = 1;
  if (!number(a, "--rows", rows) || !number(a, "--seed", seed) || rows < 1) {
    return usage("generate needs --rows N (N >= 1) and an integer --seed");
  }
  if (!a.opts.count("--out")) return usage("generate needs --out DATASET.csv");
  auto data =
      generate_dataset(static_cast<size_t>(rows), static_cast<uint64_t>(seed), KnobBounds{});
  if (Status s = write_dataset(a.opts.at("--out"), data); !s) return fail(s.error());
  std::printf("wrote %zu synthetic rows to %s\n", data.size(), a.opts.at("--out").c_str());
  return 0;
}

int train(const Args& a) {
  if (!a.opts.count("--data") || !a.opts.count("--out")) {
    return usage("train needs --data DATASET.csv and --out MODEL.json");
  }
  double holdout = 0.2, rounds = 60, depth = 6, eta = 0.2, seed = 1, threads = 1;
  if (!number(a, "--holdout", holdout) || !number(a, "--rounds", rounds) ||
      !number(a, "--depth", depth) || !number(a, "--eta", eta) || !number(a, "--seed", seed) ||
      !number(a, "--threads", threads) || threads < 1 || holdout < 0 || holdout >= 1) {
    return usage("bad number: --holdout in [0, 1), --rounds, --depth, --eta, --seed numeric");
  }
  auto data = read_dataset(a.opts.at("--data"));
  if (!data) return fail(data.error());
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::shuffle(data->begin(), data->end(), rng);
  size_t held = static_cast<size_t>(holdout * static_cast<double>(data->size()));
  if (data->size() - held < 10) {
    return fail(
        Error(Errc::invalid_argument, fmt::format("{} rows leave {} to train on: need at least 10",
                                                  data->size(), data->size() - held)));
  }
  std::span<const Sample> all(*data);
  auto train_rows = all.subspan(held);
  TrainOptions opt;
  opt.rounds = static_cast<int>(rounds);
  opt.max_depth = static_cast<int>(depth);
  opt.eta = eta;
  opt.seed = static_cast<uint64_t>(seed);
  opt.nthread = static_cast<int>(threads);
  auto model = TuningModel::train(train_rows, opt);
  if (!model) return fail(model.error());
  std::printf("trained on %zu rows: %d trees per target, depth %d, eta %g\n", train_rows.size(),
              model->trees_per_target(), opt.max_depth, opt.eta);
  auto fit = evaluate(*model, train_rows);
  if (!fit) return fail(fit.error());
  print_report("training error", *fit);
  if (held > 0) {
    auto r = evaluate(*model, all.first(held));
    if (!r) return fail(r.error());
    print_report("held-out error", *r);
  }
  if (Status s = model->save(a.opts.at("--out")); !s) return fail(s.error());
  std::printf("saved %s\n", a.opts.at("--out").c_str());
  return 0;
}

int eval(const Args& a) {
  if (!a.opts.count("--data") || !a.opts.count("--model")) {
    return usage("eval needs --data DATASET.csv and --model MODEL.json");
  }
  auto model = TuningModel::load(a.opts.at("--model"));
  if (!model) return fail(model.error());
  auto data = read_dataset(a.opts.at("--data"));
  if (!data) return fail(data.error());
  auto r = evaluate(*model, *data);
  if (!r) return fail(r.error());
  std::printf("model %s: version %llu, %d trees per target\n", a.opts.at("--model").c_str(),
              static_cast<unsigned long long>(model->version()), model->trees_per_target());
  print_report("error", *r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("no command given");
  Args a;
  a.command = argv[1];
  if (a.command == "-h" || a.command == "--help") {
    std::printf("%s", kUsage);
    return 0;
  }
  for (int i = 2; i < argc; i += 2) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
      return usage(fmt::format("expected '--option value' at '{}'", key));
    }
    a.opts[key] = argv[i + 1];
  }
  if (!TuningModel::available() && a.command != "generate") {
    std::fprintf(stderr,
                 "rdmarepl-tune: this build has no XGBoost: install libxgboost-dev and "
                 "rebuild rdmarepl\n");
    return 1;
  }
  if (a.command == "generate") return generate(a);
  if (a.command == "train") return train(a);
  if (a.command == "eval") return eval(a);
  return usage(fmt::format("unknown command '{}'", a.command));
}
