// rdmarepl-tune: the training pipeline of the model-driven tuners (XGBoost and LSTM).
//
//   rdmarepl-tune generate --rows N [--seed S] --out DATASET.csv
//   rdmarepl-tune train --data DATASET.csv[,MORE.csv...] --out MODEL.json [--holdout F]
//                       [--rounds R] [--depth D] [--eta E] [--seed S] [--threads T]
//   rdmarepl-tune train-lstm --data DATASET.csv[,MORE.csv...] --out MODEL.bin
//                       [train_lstm.py options]
//   rdmarepl-tune eval --data DATASET.csv --model MODEL.json|MODEL.bin
//
// train-lstm runs tools/rdmarepl-tune/train_lstm.py (installed beside the models) with
// Debian's /usr/bin/python3, which needs PyTorch (python3-torch). eval reads either kind of
// model file; an LSTM model sees the rows in order, as a tuner would.
//
// The dataset format is documented in docs/tuning.md. Exit status: 0 success, 1 failure
// (with a message on stderr), 2 bad usage. Arguments are parsed with CLI11.
#include <fmt/format.h>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "rdmarepl/tuning/dataset.h"
#include "rdmarepl/tuning/lstm_model.h"
#include "rdmarepl/tuning/model.h"
#include "rdmarepl/tuning/synthetic.h"

namespace {

using namespace rdmarepl;
using namespace rdmarepl::tuning;

struct GenerateArgs {
  size_t rows = 0;
  uint64_t seed = 1;
  std::string out;
};

struct TrainArgs {
  std::vector<std::string> data;  // the rows of every file, in order
  std::string out;
  double holdout = 0.2;
  int rounds = 60;
  int depth = 6;
  double eta = 0.2;
  uint64_t seed = 1;
  int threads = 1;
};

struct EvalArgs {
  std::string data, model;
};

int fail(const Error& e) {
  std::fprintf(stderr, "rdmarepl-tune: %s\n", e.message().c_str());
  return 1;
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

int generate(const GenerateArgs& a) {
  auto data = generate_dataset(a.rows, a.seed, KnobBounds{});
  if (Status s = write_dataset(a.out, data); !s) return fail(s.error());
  std::printf("wrote %zu synthetic rows to %s\n", data.size(), a.out.c_str());
  return 0;
}

int train(const TrainArgs& a) {
  std::vector<Sample> data;
  for (const auto& path : a.data) {
    auto more = read_dataset(path);
    if (!more) return fail(more.error());
    data.insert(data.end(), more->begin(), more->end());
  }
  std::mt19937_64 rng(a.seed);
  std::shuffle(data.begin(), data.end(), rng);
  size_t held = static_cast<size_t>(a.holdout * static_cast<double>(data.size()));
  if (data.size() - held < 10) {
    return fail(
        Error(Errc::invalid_argument, fmt::format("{} rows leave {} to train on: need at least 10",
                                                  data.size(), data.size() - held)));
  }
  std::span<const Sample> all(data);
  auto train_rows = all.subspan(held);
  TrainOptions opt;
  opt.rounds = a.rounds;
  opt.max_depth = a.depth;
  opt.eta = a.eta;
  opt.seed = a.seed;
  opt.nthread = a.threads;
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
  if (Status s = model->save(a.out); !s) return fail(s.error());
  std::printf("saved %s\n", a.out.c_str());
  return 0;
}

bool is_lstm_file(const std::string& path) {
  char magic[8] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, sizeof magic) && std::memcmp(magic, "RDRLSTM1", sizeof magic) == 0;
}

int eval_lstm(const EvalArgs& a) {
  auto model = LstmModel::load(a.model);
  if (!model) return fail(model.error());
  auto data = read_dataset(a.data);
  if (!data) return fail(data.error());
  auto r = evaluate_in_order(*model, *data);
  if (!r) return fail(r.error());
  std::printf("LSTM model %s: version %llu, %u steps, hidden %u\n", a.model.c_str(),
              static_cast<unsigned long long>(model->version()), model->steps(), model->hidden());
  print_report("error", *r);
  return 0;
}

// The training script: the installed copy, else the one in the source tree.
std::string lstm_script() {
  std::error_code ec;
  if (std::filesystem::exists(RDMAREPL_INSTALLED_LSTM_SCRIPT, ec))
    return RDMAREPL_INSTALLED_LSTM_SCRIPT;
  return RDMAREPL_SOURCE_LSTM_SCRIPT;
}

int train_lstm(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/python3", lstm_script()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (auto& s : argv) c.push_back(s.data());
  c.push_back(nullptr);
  std::fflush(stdout);
  ::execv(c[0], c.data());
  return fail(
      Error(Errc::not_found, fmt::format("cannot run {} {}: {}; install python3 and python3-torch",
                                         argv[0], argv[1], std::strerror(errno))));
}

int eval(const EvalArgs& a) {
  if (is_lstm_file(a.model)) return eval_lstm(a);
  auto model = TuningModel::load(a.model);
  if (!model) return fail(model.error());
  auto data = read_dataset(a.data);
  if (!data) return fail(data.error());
  auto r = evaluate(*model, *data);
  if (!r) return fail(r.error());
  std::printf("model %s: version %llu, %d trees per target\n", a.model.c_str(),
              static_cast<unsigned long long>(model->version()), model->trees_per_target());
  print_report("error", *r);
  return 0;
}

bool xgboost_or_say_so() {
  if (TuningModel::available()) return true;
  std::fprintf(stderr,
               "rdmarepl-tune: this build has no XGBoost: install libxgboost-dev and rebuild "
               "rdmarepl\n");
  return false;
}

void add_generate(CLI::App& app, GenerateArgs& g) {
  auto* cmd = app.add_subcommand(
      "generate", "write N rows of synthetic training data (docs/tuning.md, \"Synthetic data\")");
  cmd->add_option("--rows", g.rows, "rows to write")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", g.seed, "random seed")->capture_default_str();
  cmd->add_option("--out", g.out, "the dataset file to write (CSV)")->required();
}

void add_train(CLI::App& app, TrainArgs& t) {
  auto* cmd = app.add_subcommand(
      "train", "train on all but a held-out share of the rows, print the held-out error, save");
  cmd->add_option("--data", t.data,
                  "the dataset (CSV, docs/tuning.md); several, comma separated, are trained on "
                  "together")
      ->delimiter(',')
      ->required();
  cmd->add_option("--out", t.out, "the model file to write (JSON)")->required();
  cmd->add_option("--holdout", t.holdout, "share of the rows held out, in [0, 1)")
      ->check(CLI::Range(0.0, 0.999999))
      ->capture_default_str();
  cmd->add_option("--rounds", t.rounds, "boosting rounds")->capture_default_str();
  cmd->add_option("--depth", t.depth, "maximum tree depth")->capture_default_str();
  cmd->add_option("--eta", t.eta, "learning rate")->capture_default_str();
  cmd->add_option("--seed", t.seed, "seed of the shuffle and of XGBoost")->capture_default_str();
  cmd->add_option("--threads", t.threads, "XGBoost threads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void add_eval(CLI::App& app, EvalArgs& e) {
  auto* cmd = app.add_subcommand("eval", "print the model's error on every row of the dataset");
  cmd->add_option("--data", e.data, "the dataset (CSV)")->required();
  cmd->add_option("--model", e.model, "the model (XGBoost JSON or LSTM .bin)")->required();
}

void add_train_lstm(CLI::App& app, std::vector<std::string>& args) {
  auto* cmd = app.add_subcommand(
      "train-lstm",
      "train the LSTM tuner's model with PyTorch (train_lstm.py; --help lists its options)");
  cmd->prefix_command();  // everything after the subcommand goes to the script
  cmd->set_help_flag();   // --help too
  cmd->allow_extras();
  cmd->final_callback([cmd, &args] { args = cmd->remaining(); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmarepl-tune: the training pipeline of the model-driven tuners"};
  app.require_subcommand(1);
  GenerateArgs g;
  TrainArgs t;
  EvalArgs e;
  std::vector<std::string> lstm_args;
  add_generate(app, g);
  add_train(app, t);
  add_train_lstm(app, lstm_args);
  add_eval(app, e);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    return app.exit(err) == 0 ? 0 : 2;
  }
  if (app.got_subcommand("generate")) return generate(g);
  if (app.got_subcommand("train-lstm")) return train_lstm(lstm_args);
  if (app.got_subcommand("eval") && is_lstm_file(e.model)) return eval_lstm(e);
  if (!xgboost_or_say_so()) return 1;
  if (app.got_subcommand("train")) return train(t);
  return eval(e);
}
