// The rdmarepl-doctor binary on this host: the check-list runs to the end without crashing,
// every RDMA check fails with its reason when the host has no RDMA device, the exit status
// says so, and a write-with-immediate round trip runs against the doctor's own listener.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

namespace {

struct Run {
  int status = -1;
  std::string out;
};

Run run(const std::string& args) {
  Run r;
  FILE* p = ::popen((std::string(DOCTOR_PATH) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool has_line(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex(pattern, std::regex::multiline));
}

}  // namespace

TEST_CASE("doctor on this host: one line per check and RDMA checks fail without a device",
          "[doctor][host]") {
  const bool rdma = std::filesystem::exists("/sys/class/infiniband") &&
                    !std::filesystem::is_empty("/sys/class/infiniband");
  auto r = run("");
  INFO(r.out);
  // Every line is a verdict; the non-RDMA checks are all there.
  CHECK(has_line(r.out, "^(PASS|WARN|FAIL) memlock: locked-memory limit"));
  CHECK(has_line(r.out, "^(PASS|WARN) huge pages: "));
  CHECK(has_line(r.out, "^(PASS|WARN) vm.overcommit_memory: "));
  CHECK(has_line(r.out, "^(PASS|WARN) irqbalance: "));
  CHECK(has_line(r.out, "^(PASS|WARN) cpu governor: "));
  CHECK_FALSE(has_line(r.out, "^(?!PASS |WARN |FAIL ).+"));
  if (rdma) {
    WARN("this host has RDMA devices: the RDMA verdicts are checked by the rxe_doctor test");
    return;
  }
  for (const char* name :
       {"rdma devices", "port state", "write-with-imm and read", "gid", "mtu", "device limits"})
    CHECK(has_line(r.out, std::string("^FAIL ") + name + ": no RDMA device .*; fix: "));
  CHECK(r.status == 1);
}

TEST_CASE("doctor: a small memlock limit is reported with its size", "[doctor][host]") {
  auto r = run("--shards 1 --retain-bytes 1048576 --zero-copy-pool-bytes 0 --json");
  INFO(r.out);
  CHECK(r.out.find("\"name\": \"memlock\"") != std::string::npos);
  // bash's ulimit applies to the child only.
  auto small = run("--help >/dev/null; ulimit -l 64; " DOCTOR_PATH " --shards 4");
  INFO(small.out);
  CHECK(has_line(small.out, "^(FAIL|WARN) memlock: locked-memory limit 64 KiB \\(ulimit -l 64\\)"));
}

TEST_CASE("doctor: write-with-immediate round trip to its own listener over TCP",
          "[doctor][host]") {
  FILE* l = ::popen(DOCTOR_PATH " --listen 127.0.0.1:0 --transport tcp --connections 1", "r");
  REQUIRE(l != nullptr);
  char line[256] = {};
  REQUIRE(std::fgets(line, sizeof line, l) != nullptr);
  std::smatch m;
  std::string first(line);
  REQUIRE(std::regex_search(first, m, std::regex("listening on 127.0.0.1:(\\d+) over tcp")));
  auto r = run("--transport tcp --peer 127.0.0.1:" + m[1].str());
  INFO(r.out);
  CHECK(has_line(r.out,
                 "^PASS peer 127.0.0.1:\\d+: 4096-byte write-with-immediate round trip "
                 "to 'rdmarepl-doctor-listener' over tcp in \\d+ us"));
  CHECK(::pclose(l) == 0);  // served one connection and exited

  auto refused = run("--transport tcp --peer 127.0.0.1:1");
  CHECK(has_line(refused.out,
                 "^FAIL peer 127.0.0.1:1: connect\\(127.0.0.1:1\\): Connection "
                 "refused"));
  CHECK(refused.status == 1);
  auto bad = run("--peer nonsense");
  CHECK(has_line(bad.out, "^FAIL peer nonsense: 'nonsense' is not host:port"));
  CHECK(run("--transport carrier-pigeon").status == 2);  // bad usage
  CHECK(run("--help").status == 0);
}
