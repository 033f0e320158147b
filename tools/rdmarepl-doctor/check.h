// One line of the doctor's report: a verdict, what was checked, what was found and, unless
// it passed, what to do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rdmarepl::doctor {

enum class Verdict { pass, warn, fail };

std::string_view to_string(Verdict v) noexcept;  // "PASS", "WARN", "FAIL"

struct Check {
  Verdict verdict = Verdict::pass;
  std::string name;    // short and stable: "memlock", "port rxe0/1"
  std::string detail;  // what was found
  std::string advice;  // what to do (empty for PASS)
};

// "FAIL memlock: 64 KiB locked-memory limit < 97 MiB ...; fix: ulimit -l unlimited".
std::string format_line(const Check& c);

// True when any check failed: the doctor's exit status.
bool any_failed(const std::vector<Check>& checks) noexcept;

// "64 KiB", "97 MiB", "2 GiB": for messages.
std::string human_bytes(uint64_t bytes);

}  // namespace rdmarepl::doctor
