#include "redis_compare.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rdmarepl::bench {

Result<RedisResult> run_redis(const RedisRun& run) {
  char tmpl[] = "/tmp/rdmarepl-bench-redis.XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) return errno_error(errno, "mkstemp for the Redis result file");
  ::close(fd);
  std::string path = tmpl;
  // The script's own progress and errors go to our stderr; its JSON goes to the file.
  std::string cmd =
      fmt::format("'{}' -n {} -d {} -r {} -P {} --replicas {} --json '{}' >/dev/null", run.script,
                  run.records, run.value_size, run.keyspace, run.pipeline, run.followers, path);
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  ::unlink(path.c_str());
  if (code == 77) {
    return Error(Errc::unsupported,
                 "redis-server or redis-benchmark is not installed; install "
                 "redis-server and redis-tools (scripts/setup does)");
  }
  if (code != 0) {
    return Error(Errc::io_error, fmt::format("{} exited with status {}; run it by hand to see why",
                                             run.script, code));
  }
  RedisResult r;
  try {
    r.json = nlohmann::json::parse(ss.str());
    const auto& lat = r.json.at("latency_us");
    r.ops_per_sec = r.json.at("ops_per_sec").get<double>();
    r.mb_per_sec = r.json.value("mb_per_sec", 0.0);
    r.seconds = r.json.value("seconds", 0.0);
    r.cpu_seconds = r.json.value("cpu_seconds", 0.0);
    r.avg_us = lat.value("avg", 0.0);
    r.p50_us = lat.value("p50", 0.0);
    r.p99_us = lat.value("p99", 0.0);
    r.verified = r.json.value("verified", false);
  } catch (const nlohmann::json::exception& e) {
    return Error(Errc::protocol_error,
                 fmt::format("the Redis script's result is not the JSON it should print ({}): '{}'",
                             e.what(), ss.str()));
  }
  if (!(r.ops_per_sec > 0)) {
    return Error(Errc::protocol_error,
                 "the Redis script's result has no ops_per_sec: '" + r.json.dump() + "'");
  }
  return r;
}

}  // namespace rdmarepl::bench
