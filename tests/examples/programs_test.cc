// Runs the demo, the embedding example, the bench driver and the Redis comparison script
// as a user would, with small sizes, and checks what they print and write.
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

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

TEST_CASE("demo: a follower is killed and restarted, and every digest matches", "[demo]") {
  auto r = run(std::string(RDMAREPL_DEMO_BIN) + " --records 20000 --quiet --timeout 120");
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
  CHECK(r.text.find("verified         yes") != std::string::npos);
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
