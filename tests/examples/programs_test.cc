// Runs the demo, the embedding example, the bench driver, the tuning tool and the Redis
// comparison script as a user would, with small sizes, and checks what they print and write.
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct Output {
  int code = -1;
  std::string text;  // stdout and stderr
};

Output run(const std::string& command) {
  Output out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.text.append(buf.data(), n);
  int status = ::pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

// The comma-separated cells of one CSV line (the files written here quote nothing).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string c; std::getline(in, c, ',');) out.push_back(c);
  return out;
}

std::string temp_path(const char* tag) {
  return std::string("/tmp/rdmarepl-test-") + tag + "-" + std::to_string(::getpid()) + ".json";
}

// Checks a JSON file with python3's parser: `checks` is a Python expression over `d`.
bool json_ok(const std::string& path, const std::string& checks) {
  std::string script = path + ".check.py";
  {
    std::ofstream py(script);
    py << "import json, sys\nd = json.load(open(sys.argv[1]))\nsys.exit(0 if (" << checks
       << ") else 1)\n";
  }
  auto r = run("python3 " + script + " " + path);
  std::remove(script.c_str());
  if (r.code != 0) UNSCOPED_INFO("python3 check failed: " << checks << "\n" << r.text);
  return r.code == 0;
}

}  // namespace

// Then the failover part: a group's leader is killed twice and no acknowledged write is lost.
TEST_CASE("demo: a follower is killed and restarted, every digest matches", "[demo]") {
  auto r =
      run(std::string(RDMAREPL_DEMO_BIN) + " --records 20000 --failovers 2 --quiet --timeout 120");
  INFO(r.text);
  REQUIRE(r.code == 0);
  // Three digest lines (leader and two followers) with one and the same value.
  std::regex line(R"(\n  (leader|follower-\d)\s+([0-9a-f]{16}/\d+))");
  std::string leader;
  int followers_matching = 0;
  for (auto it = std::sregex_iterator(r.text.begin(), r.text.end(), line);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[1] == "leader") {
      leader = (*it)[2];
    } else if ((*it)[2] == leader) {
      ++followers_matching;
    }
  }
  CHECK_FALSE(leader.empty());
  CHECK(followers_matching == 2);
  CHECK(r.text.find("follower-1       killed and restarted") != std::string::npos);
  // Every follower served reads; the leader read 1000 keys back from each one.
  CHECK(r.text.find("reads            1000 keys read back from each of 2 followers' read "
                    "servers: every answer equals the leader's store") != std::string::npos);
  CHECK(r.text.find("verified         yes: every store holds the same contents") !=
        std::string::npos);
  // The failover part: two leader kills, each followed by a new leader's acknowledgement.
  CHECK(r.text.find("over 2 (SIGKILL of the leader") != std::string::npos);
  CHECK(r.text.find("\n  acknowledged lost: 0\n") != std::string::npos);
  CHECK(r.text.find("\n  linearizable     yes: ") != std::string::npos);
  CHECK(r.text.find("verified         yes: every member holds every acknowledged write") !=
        std::string::npos);
}

TEST_CASE("demo: a bad flag is a usage error with a hint", "[demo]") {
  auto r = run(std::string(RDMAREPL_DEMO_BIN) + " --records lots");
  CHECK(r.code == 2);
  CHECK(r.text.find("--records") != std::string::npos);
  auto u = run(std::string(RDMAREPL_DEMO_BIN) + " --frobnicate 1");
  CHECK(u.code == 2);
  CHECK(u.text.find("unknown flag --frobnicate") != std::string::npos);
}

TEST_CASE("embed_minimal replicates to a follower in the same process", "[embed]") {
  auto r = run(RDMAREPL_EMBED_BIN);
  INFO(r.text);
  CHECK(r.code == 0);
  CHECK(r.text.find("identical to the leader's") != std::string::npos);
}

TEST_CASE("bench driver writes valid JSON with verified true", "[bench]") {
  std::string path = temp_path("bench");
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --records 20000 --value-size 1024 --followers 2 --ack all --transport tcp"
               " --compare tcp-stream --quiet --timeout 120 --json " +
               path);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(json_ok(path,
                "d['verified'] is True and d['records'] == 20000 and d['followers'] == 2 and "
                "d['value_size'] == 1024 and d['transport'] == 'tcp' and d['ops_per_sec'] > 0 and "
                "d['mb_per_sec'] > 0 and d['cpu_seconds'] > 0 and "
                "all(d['latency_us'][k] > 0 for k in ('avg', 'p50', 'p99', 'p999')) and "
                "d['latency_us']['p50'] <= d['latency_us']['p99'] <= d['latency_us']['p999'] and "
                "d['compare']['tcp_stream']['verified'] is True"));
  std::remove(path.c_str());
}

TEST_CASE("bench driver --burst runs every strategy over the schedule and reports targets",
          "[bench]") {
  // The smallest schedule: one base and one burst phase of 2 windows, 2 fixed settings,
  // 2 repeats. It checks the experiment's plumbing, not its numbers.
  const std::string csv = temp_path("burst") + ".csv";
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --burst --burst-cycles 1 --phase-windows 2 --window-ms 100 --warmup-windows 1"
               " --repeats 2 --burst-grid 2 --burst-workloads 1k --rate 5 --transport tcp"
               " --burst-csv " +
               csv);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(r.text.find("verified: yes") != std::string::npos);
  for (const char* s : {"static-default ", "heuristic ", "xgboost ", "lstm ", "fixed-0 ",
                        "fixed-1 ", "best-fixed ", "oracle "})
    CHECK(std::regex_search(r.text, std::regex(std::string("\\n") + s + " +[0-9.]+ \\[")));
  CHECK(std::regex_search(r.text, std::regex("xgboost: windows over SLO .*(met|NOT met)")));
  CHECK(std::regex_search(r.text, std::regex("lstm: windows over SLO .*(met|NOT met)")));
  // 6 strategies x 2 repeats x (2 phases x 2 windows), plus the header.
  std::ifstream in(csv);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  CHECK(lines == 1 + 6 * 2 * 4);
  // --burst-summary reads the CSV back into the same report, line for line.
  const auto summary = [&] {
    return run(std::string(RDMAREPL_BENCH_BIN) +
               " --burst --burst-summary --burst-cycles 1 --phase-windows 2 --window-ms 100"
               " --rate 5 --burst-csv " +
               csv);
  };
  auto again = summary();
  INFO(again.text);
  REQUIRE(again.code == 0);
  const auto report = [](const std::string& text) {
    std::string out;
    std::istringstream text_in(text);
    for (std::string line; std::getline(text_in, line);)
      if (std::regex_search(line, std::regex("^([a-z-]+[0-9]* +[0-9.]+ \\[|[a-z]+: windows)")))
        out += line + "\n";
    return out;
  };
  CHECK(report(again.text) == report(r.text));
  CHECK(report(again.text).find("best-fixed ") != std::string::npos);
  // A run cut short mid-line: the incomplete line is left out, and said so.
  std::ofstream(csv, std::ios::app) << "0,1k,xgboost,0,base";
  auto cut = summary();
  INFO(cut.text);
  REQUIRE(cut.code == 0);
  CHECK(cut.text.find("skipped 1 line(s)") != std::string::npos);
  CHECK(cut.text.find("the first is line 50") != std::string::npos);
  CHECK(report(cut.text) == report(r.text));
  std::remove(csv.c_str());
}

TEST_CASE("bench driver --sweep writes one row per setting, less the disturbed ones", "[bench]") {
  // One cell, 4 settings (3 moves) of 2 windows each: 3 rows, each a whole dataset row.
  const std::string csv = temp_path("sweep") + ".csv";
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --sweep --sweep-values 1024 --sweep-rates 4 --sweep-windows 4 --sweep-repeat 2"
               " --window-ms 100 --transport tcp --sweep-out " +
               csv);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(r.text.find("4 settings x 2 windows of 100 ms") != std::string::npos);
  // A row is dropped only when processes outside the cluster kept > 25% of a CPU busy in
  // one of its windows; beside ctest -j2 that may happen, so rows and drops add up to 3.
  std::smatch m;
  REQUIRE(std::regex_search(r.text, m, std::regex("wrote ([0-9]+) rows .* \\(([0-9]+) dropped")));
  CHECK(std::stoi(m[1]) + std::stoi(m[2]) == 3);
  CHECK(r.text.find("followers verified") != std::string::npos);
  std::ifstream in(csv);
  std::string header;
  REQUIRE(std::getline(in, header));
  CHECK(header.find("out_p99_us") != std::string::npos);
  size_t rows = 0;
  for (std::string line; std::getline(in, line);) ++rows;
  CHECK(rows == static_cast<size_t>(std::stoi(m[1])));
  std::remove(csv.c_str());
}

TEST_CASE("bench driver --sweep --wal-dir logs every batch and records the syncs' p99", "[bench]") {
  const std::string csv = temp_path("sweep-wal") + ".csv";
  const std::string wal = temp_path("sweep-wal") + ".d";
  // No row is dropped for other processes (ctest -j2 runs other tests beside it): 3 rows.
  std::filesystem::create_directories(wal + "/leader");
  std::ofstream(wal + "/leader/stale") << "a log left from another run";  // must be emptied
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --sweep --sweep-values 1024 --sweep-rates 4 --sweep-windows 4 --window-ms 100"
               " --sweep-max-foreign-cpu 10000 --transport tcp --wal-dir " +
               wal + " --sweep-out " + csv);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(r.text.find("wrote 3 rows") != std::string::npos);
  CHECK(r.text.find("followers verified") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(wal + "/leader/stale"));
  CHECK(std::filesystem::exists(wal + "/follower-1"));
  // Every row's observed window synced the leader's log: its p99 is a positive number.
  std::ifstream in(csv);
  std::string header;
  REQUIRE(std::getline(in, header));
  const std::vector<std::string> names = csv_cells(header);
  const auto col = std::find(names.begin(), names.end(), "wal_sync_p99_us") - names.begin();
  REQUIRE(static_cast<size_t>(col) < names.size());
  size_t rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    const std::vector<std::string> cells = csv_cells(line);
    REQUIRE(cells.size() > static_cast<size_t>(col));
    INFO(line);
    CHECK(std::stod(cells[col]) > 0);
  }
  CHECK(rows == 3);
  std::filesystem::remove_all(wal);
  std::remove(csv.c_str());
}

TEST_CASE("bench driver --shift limits the follower and records the model's predictions",
          "[bench]") {
  // The cgroup CPU quota needs root and a cpu controller: without them the run must fail
  // with a message saying so, and the rest cannot be checked here.
  const bool v1 = ::access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK) == 0;
  const bool v2 = ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 &&
                  ::access("/sys/fs/cgroup/cpu.stat", F_OK) == 0 && ::geteuid() == 0;
  const std::string csv = temp_path("shift") + ".csv";
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --shift --phase-windows 4 --shift-windows 4 --shift-block 4 --shift-refresh 2"
               " --shift-cpu 50 --window-ms 100 --warmup-windows 1 --repeats 1 --rate 4"
               " --transport tcp --shift-csv " +
               csv);
  INFO(r.text);
  if (!v1 && !v2) {
    WARN(
        "skipped the run's checks: no writable cgroup cpu controller here (needs root and "
        "/sys/fs/cgroup/cpu or a cgroup v2 cpu controller)");
    CHECK(r.code == 2);
    CHECK(r.text.find("cgroup") != std::string::npos);
    return;
  }
  REQUIRE(r.code == 0);
  CHECK(r.text.find("verified: yes") != std::string::npos);
  // Two strategies x 2 blocks (before and after the move).
  for (const char* s : {"online ", "frozen "})
    CHECK(std::regex_search(r.text, std::regex(std::string("\\n") + s + " +1 +4\\*")));
  // Every window after the first has a prediction; the online model was refreshed (every 2
  // samples), the frozen one never.
  std::ifstream in(csv);
  std::string line;
  REQUIRE(std::getline(in, line));
  size_t rows = 0, predicted = 0, refreshed = 0, frozen_refreshed = 0;
  while (std::getline(in, line)) {
    ++rows;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    REQUIRE(f.size() >= 11);
    if (f[6] != "nan") ++predicted;
    if (f[1] == "online" && std::stoi(f[10]) > 1) ++refreshed;
    if (f[1] == "frozen" && std::stoi(f[10]) > 1) ++frozen_refreshed;
  }
  CHECK(rows == 2 * 8);
  CHECK(predicted == 2 * 7);
  CHECK(refreshed > 0);
  CHECK(frozen_refreshed == 0);
  // The follower's group is gone after the run.
  const char* root = v1 ? "/sys/fs/cgroup/cpu" : "/sys/fs/cgroup";
  for (const auto& e : std::filesystem::directory_iterator(root))
    CHECK(e.path().filename().string().rfind("rdmarepl-bench-", 0) != 0);
  std::remove(csv.c_str());
}

TEST_CASE("bench driver --outstanding 1 runs a closed loop: one record per batch", "[bench]") {
  // Each write waits for its commit before the next is issued, and the wait seals the open
  // batch at once: every batch carries exactly one record (open loop packs many per batch).
  std::string path = temp_path("bench-closed");
  auto r = run(std::string(RDMAREPL_BENCH_BIN) +
               " --records 2000 --value-size 1024 --followers 1 --ack all --transport tcp"
               " --outstanding 1 --quiet --timeout 120 --json " +
               path);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(r.text.find("outst=1") != std::string::npos);
  CHECK(json_ok(path,
                "d['verified'] is True and d['records'] == 2000 and d['outstanding'] == 1 and "
                "d['reconnects'] == 0 and d['batches'] == 2000 and "
                "d['leader_metrics']['records_replicated'] == 2000 and "
                "d['leader_metrics']['batches_sealed'] == 2000 and "
                "d['leader_metrics']['followers'] == 1 and "
                "'closed loop' in d['latency_kind'] and "
                "0 < d['latency_us']['p50'] <= d['latency_us']['p99']"));
  std::remove(path.c_str());
}

TEST_CASE("rdmarepl-tune trains on several datasets together and evaluates a model", "[tune]") {
  const std::string a = temp_path("tune-a") + ".csv", b = temp_path("tune-b") + ".csv";
  const std::string model = temp_path("tune-model");
  const std::string tune = RDMAREPL_TUNE_BIN;
  for (const auto& [path, rows, seed] : {std::tuple{a, 200, 1}, std::tuple{b, 150, 2}}) {
    auto g = run(tune + " generate --rows " + std::to_string(rows) + " --seed " +
                 std::to_string(seed) + " --out " + path);
    INFO(g.text);
    REQUIRE(g.code == 0);
  }
  auto t = run(tune + " train --data " + a + "," + b + " --out " + model +
               " --holdout 0.2 --rounds 5 --depth 2");
  INFO(t.text);
  if (t.code != 0 && t.text.find("has no XGBoost") != std::string::npos) {
    WARN("skipped: this build has no XGBoost (libxgboost-dev), so rdmarepl-tune cannot train");
    return;
  }
  REQUIRE(t.code == 0);
  // 350 rows of both files, 70 held out.
  CHECK(t.text.find("trained on 280 rows: 5 trees per target, depth 2") != std::string::npos);
  CHECK(t.text.find("held-out error: 70 rows") != std::string::npos);
  auto e = run(tune + " eval --data " + b + " --model " + model);
  INFO(e.text);
  REQUIRE(e.code == 0);
  CHECK(e.text.find("error: 150 rows") != std::string::npos);
  // A missing file among several is named, and nothing is written.
  std::remove(model.c_str());
  auto missing = run(tune + " train --data " + a + ",/nonexistent/rdmarepl.csv --out " + model);
  INFO(missing.text);
  CHECK(missing.code == 1);
  CHECK(missing.text.find("/nonexistent/rdmarepl.csv") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(model));
  for (const auto& f : {a, b}) std::remove(f.c_str());
}

TEST_CASE("Redis replication script loads, waits for both replicas and verifies", "[redis]") {
  if (std::system("command -v redis-server >/dev/null 2>&1") != 0) {
    WARN(
        "skipped: redis-server is not installed (install redis-server redis-tools; "
        "scripts/setup does)");
    return;
  }
  std::string path = temp_path("redis");
  auto r = run(std::string(RDMAREPL_REDIS_SCRIPT) + " -n 5000 -d 256 --json " + path);
  INFO(r.text);
  REQUIRE(r.code == 0);
  CHECK(json_ok(path,
                "d['verified'] is True and d['records'] == 5000 and d['followers'] == 2 and "
                "d['value_size'] == 256 and d['ops_per_sec'] > 0 and d['cpu_seconds'] > 0 and "
                "d['keys'] > 0 and d['latency_us']['p99'] > 0"));
  std::remove(path.c_str());
}
