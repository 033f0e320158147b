// Progress of a long run on stdout: a redrawn bar on a terminal, a line every 10% (at most
// one every second) otherwise, so logs and test output stay short.
#pragma once

#include <cstdint>
#include <string>

namespace rdmarepl::kvdemo {

class Progress {
 public:
  Progress(std::string label, uint64_t total, bool enabled = true);
  // `done` of `total`; `note` is appended (e.g. "follower-1 killed").
  void update(uint64_t done, const std::string& note = {});
  // Ends the bar line (a terminal needs the newline).
  void finish();

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool tty_;
  uint64_t start_ns_;
  uint64_t last_draw_ns_ = 0;
  uint64_t next_decile_ = 1;
  bool finished_ = false;
};

}  // namespace rdmarepl::kvdemo
