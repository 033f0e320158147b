// A small command-line parser shared by the demo and the bench driver: `--name value`,
// `--name=value` and bare boolean switches. Unknown flags are an error that names the flag.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::kvdemo {

class Flags {
 public:
  // `switches` are the flags that take no value; every other `--x` takes one.
  static Result<Flags> parse(int argc, char** argv, const std::vector<std::string>& switches);

  [[nodiscard]] bool has(std::string_view name) const {
    return values_.count(std::string(name)) != 0;
  }
  [[nodiscard]] std::string get(std::string_view name, std::string_view fallback = {}) const;
  // Every value given for a repeatable flag, in order.
  [[nodiscard]] std::vector<std::string> get_all(std::string_view name) const;
  // Integers accept k/m/g suffixes (powers of 1000 for counts: 1m = 1000000).
  [[nodiscard]] Result<uint64_t> get_u64(std::string_view name, uint64_t fallback) const;
  // Flags seen that are not in `known`; the caller reports them.
  [[nodiscard]] std::vector<std::string> unknown(const std::vector<std::string>& known) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

// "64", "4k", "1m" -> number; the error names `what` and the text.
Result<uint64_t> parse_count(std::string_view text, std::string_view what);
// "MIN-MAX" or "N" (then MIN = MAX = N).
Result<std::pair<uint64_t, uint64_t>> parse_range(std::string_view text, std::string_view what);
// "host:port,host:port" -> endpoints; the error names `what` and the bad item.
Result<std::vector<transport::Endpoint>> parse_endpoints(std::string_view text,
                                                         std::string_view what);

}  // namespace rdmarepl::kvdemo
