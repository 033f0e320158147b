// Runs benchmarks/compare/redis_replication.sh and reads back its JSON result.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "rdmarepl/core/result.h"

namespace rdmarepl::bench {

struct RedisResult {
  nlohmann::json json;  // the script's whole JSON object
  double ops_per_sec = 0;
  double mb_per_sec = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double p50_us = 0;
  double p99_us = 0;
  double avg_us = 0;
  bool verified = false;
};

struct RedisRun {
  std::string script;  // path of redis_replication.sh
  uint64_t records = 0;
  uint32_t value_size = 0;
  uint64_t keyspace = 0;
  uint32_t followers = 2;
  uint32_t pipeline = 16;
};

// Errc::unsupported when redis-server is not installed (the script exits 77).
Result<RedisResult> run_redis(const RedisRun& run);

}  // namespace rdmarepl::bench
