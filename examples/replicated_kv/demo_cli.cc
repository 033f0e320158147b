#include "demo_cli.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <string>

#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::kvdemo {

namespace {

using replication::AckMode;
using replication::PollingMode;
using replication::TransportKind;

constexpr size_t kHelpColumn = 26;  // where CLI11 starts an option's description
constexpr size_t kHelpWidth = 94;

// CLI11 prints a description on one line: break it at spaces so that it stays within
// kHelpWidth columns, continuing under its first line.
std::string wrap(const std::string& text) {
  std::string out;
  size_t line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (line > 0 && kHelpColumn + line + 1 + word.size() > kHelpWidth) {
      out += "\n";  // CLI11 indents the continuation to the description column
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    pos = end + 1;
  }
  return out;
}

// A CLI11 validation error carrying our parsers' message (which names the flag).
[[noreturn]] void reject(const Error& e) {
  throw CLI::ValidationError(e.message());
}

// Counts take k/m suffixes (parse_count); `max` bounds 32-bit fields.
template <class T>
void count_option(CLI::App& app, const std::string& flag, T& out, const std::string& help,
                  uint64_t max = UINT64_MAX, const char* type_name = "N") {
  app.add_option_function<std::string>(
         flag,
         [&out, flag, max](const std::string& s) {
           auto v = parse_count(s, flag);
           if (!v) reject(v.error());
           if (*v > max)
             reject(Error(Errc::invalid_argument,
                          fmt::format("{} {} is too large (at most {})", flag, *v, max)));
           out = static_cast<T>(*v);
         },
         wrap(help))
      ->type_name(type_name);
}

template <class E>
void enum_option(CLI::App& app, const std::string& flag, E& out, const std::string& help,
                 const char* type_name) {
  app.add_option_function<std::string>(
         flag,
         [&out, flag](const std::string& s) {
           auto v = parse_enum<E>(s, flag);
           if (!v) reject(v.error());
           out = *v;
         },
         wrap(help))
      ->type_name(type_name);
}

void value_size_option(CLI::App& app, WorkloadSpec& w) {
  app.add_option_function<std::string>(
         "--value-size",
         [&w](const std::string& s) {
           auto r = parse_range(s, "--value-size");
           if (!r) reject(r.error());
           if (r->second > (64u << 20))
             reject(Error(Errc::invalid_argument,
                          "--value-size " + s + ": values up to 64 MiB are supported here"));
           w.value_min = static_cast<uint32_t>(r->first);
           w.value_max = static_cast<uint32_t>(r->second);
         },
         "value sizes, uniform in [A, B] bytes, or one size N (default 16-1024)")
      ->type_name("A-B");
}

void workload_options(CLI::App& app, RunConfig& c) {
  auto& w = c.workload;
  count_option(app, "--records", w.records,
               "records to write (default 1000000; k/m suffixes: 200k, 1m)");
  count_option(app, "--followers", c.followers, "follower processes (default 2)", UINT32_MAX);
  value_size_option(app, w);
  count_option(app, "--key-size", w.key_size, "key bytes (default 16)", UINT32_MAX);
  count_option(app, "--keyspace", w.keyspace, "distinct keys (default: records)");
  count_option(app, "--seed", w.seed,
               "workload seed (default 42); the same seed gives the same workload");
  count_option(app, "--erase-percent", w.erase_percent,
               "share of the writes that are erases (default 1)", 100);
}

void channel_options(CLI::App& app, RunConfig& c) {
  enum_option(app, "--transport", c.transport,
              "auto | tcp | verbs (default auto: verbs when an RDMA device is active, else tcp)",
              "T");
  enum_option(app, "--ack", c.ack,
              "none | one | all | quorum: when a write counts as committed (default all)", "M");
  count_option(app, "--shards", c.shards, "shards, i.e. connections per follower (default 1)",
               UINT32_MAX);
  count_option(app, "--batch-bytes", c.batch_bytes, "batch size (default: the channel's, 64 KiB)");
  enum_option(app, "--polling", c.polling,
              "followers' poller: busy | sleep | blocking (default blocking)", "P");
  enum_option(app, "--leader-polling", c.leader_polling,
              "manual | busy | sleep | blocking (default manual: the writer drives it)", "P");
  count_option(app, "--poll-us", c.poll_us,
               "poll interval / longest block in microseconds (default: the channel's)");
  count_option(app, "--flush-us", c.flush_us,
               "seal a batch this long after its first record (default: the channel's)");
  count_option(app, "--outstanding", c.outstanding,
               "writes in flight at most (default 0: no limit); 1 waits for each write's "
               "commit before the next");
  count_option(app, "--retain-bytes", c.retain_bytes,
               "leader's retained window per shard (default: the whole run when a follower is "
               "killed, so that it can be caught up from scratch)");
  count_option(app, "--ring-bytes", c.ring_bytes,
               "followers' receive ring per shard (default: the channel's)");
  app.add_option("--wal-dir", c.wal_dir,
                 wrap("write-ahead logs: the leader logs to D/leader, follower n to "
                      "D/follower-n (default: no log)"))
      ->type_name("D");
  enum_option(app, "--durability", c.durability,
              "none | batch | interval (default batch; with --wal-dir)", "M");
  app.add_option_function<std::string>(
         "--store",
         [&c](const std::string& s) {
           if (s != "map" && s != "digest")
             reject(Error(Errc::invalid_argument,
                          "--store '" + s + "' is not map (keep values) or digest (keep hashes)"));
           c.digest_only_store = s == "digest";
         },
         "map (keep every value, default) | digest (keep a hash per key)")
      ->type_name("S");
}

void run_options(CLI::App& app, RunConfig& c, bool& no_kill, double& kill_at, uint64_t& linger,
                 uint64_t& timeout) {
  app.add_flag("--no-kill", no_kill, "do not kill and restart a follower");
  app.add_option("--kill-at", kill_at,
                 "fraction of the records after which follower-1 is killed (default 0.4)")
      ->type_name("F")
      ->check(CLI::Range(0.0, 1.0).description(""));
  count_option(app, "--metrics-port", c.metrics_port,
               "serve Prometheus metrics: the leader on 127.0.0.1:P/metrics, follower i "
               "(1-based) on port P+i (default 0: none)",
               65535, "P");
  count_option(app, "--read-keys", c.read_keys,
               "each follower serves reads; after the run the leader reads N keys back from "
               "every follower and compares them with its store (default 1000 with --store "
               "map, 0: no reads)",
               UINT64_MAX, "N");
  count_option(app, "--linger", linger,
               "after the run, keep every process (and its metrics) up S seconds before "
               "stopping them (default 0)",
               UINT64_MAX, "S");
  count_option(app, "--timeout", timeout, "give up after S seconds (default 300)", UINT64_MAX, "S");
  app.add_flag_callback(
      "--quiet", [&c] { c.progress = false; }, "no progress output");
}

}  // namespace

DemoCommand parse_demo_command(int argc, char** argv) {
  DemoCommand cmd;
  RunConfig& c = cmd.config;
  c.workload.erase_percent = 1;
  // One connection per follower and followers that block until bytes arrive: the fewest
  // system calls and wake-ups per batch on a small machine (see docs/benchmarks.md).
  c.shards = 1;
  c.polling = PollingMode::blocking;
  c.read_keys = 1000;
  bool no_kill = false;
  double kill_at = 0.4;
  uint64_t linger = 0;
  uint64_t timeout = 300;

  CLI::App app(
      "replicated_kv: replicate a key-value workload from a leader to followers\n"
      "(separate processes on loopback), kill and restart a follower part way, verify every "
      "store.",
      "replicated_kv");
  app.footer(
      "Exit status: 0 when every follower's contents equal the leader's, 1 when they differ,\n"
      "2 on a usage error, 3 when the run failed.");
  app.get_formatter()->column_width(26);
  workload_options(app, c);
  channel_options(app, c);
  run_options(app, c, no_kill, kill_at, linger, timeout);
  count_option(app, "--failovers", cmd.failovers,
               "then run a 3-member group that elects its leader through etcd and kill -9 "
               "its leader N times under writes (default 1; 0: skip this part)",
               1000, "N");
  app.add_option("--etcd", cmd.etcd,
                 "the failover part's etcd client URL (default: start /usr/bin/etcd with a "
                 "temporary data directory)")
      ->type_name("URL");
  app.allow_extras();  // reported below in the demo's own words
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    cmd.exit_code = app.exit(e);
    return cmd;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "replicated_kv: {}; try --help\n", e.what());
    cmd.exit_code = 2;
    return cmd;
  }
  if (auto extra = app.remaining(); !extra.empty()) {
    fmt::print(stderr, "replicated_kv: unknown {} {}; try --help\n",
               extra.front().rfind("--", 0) == 0 ? "flag" : "argument", extra.front());
    cmd.exit_code = 2;
    return cmd;
  }
  if (c.digest_only_store && app.count("--read-keys") == 0) c.read_keys = 0;
  c.kill_at = no_kill ? 0.0 : kill_at;
  if (!no_kill && (c.kill_at <= 0 || c.kill_at >= 1)) {
    fmt::print(stderr, "replicated_kv: --kill-at {} is out of range; use 0 < F < 1\n", c.kill_at);
    cmd.exit_code = 2;
    return cmd;
  }
  c.restart_at = std::min(c.kill_at + 0.1, 0.95);
  c.timeout = std::chrono::seconds(timeout);
  c.linger = std::chrono::seconds(linger);
  if (auto s = validate(c); !s) {
    fmt::print(stderr, "replicated_kv: {}\n", s.error().message());
    cmd.exit_code = 2;
  }
  return cmd;
}

}  // namespace rdmarepl::kvdemo
