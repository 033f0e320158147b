#include "redis_compare.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "json_writer.h"

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
  r.json = ss.str();
  while (!r.json.empty() && (r.json.back() == '\n' || r.json.back() == ' ')) r.json.pop_back();
  r.ops_per_sec = kvdemo::json_number(r.json, "ops_per_sec");
  r.mb_per_sec = kvdemo::json_number(r.json, "mb_per_sec");
  r.seconds = kvdemo::json_number(r.json, "seconds");
  r.cpu_seconds = kvdemo::json_number(r.json, "cpu_seconds");
  r.avg_us = kvdemo::json_number(r.json, "avg");
  r.p50_us = kvdemo::json_number(r.json, "p50");
  r.p99_us = kvdemo::json_number(r.json, "p99");
  r.verified = kvdemo::json_true(r.json, "verified");
  if (!(r.ops_per_sec > 0)) {
    return Error(Errc::protocol_error,
                 "the Redis script's result has no ops_per_sec: '" + r.json + "'");
  }
  return r;
}

}  // namespace rdmarepl::bench
