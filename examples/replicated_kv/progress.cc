#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::kvdemo {

namespace {
constexpr int kBarWidth = 30;
constexpr uint64_t kTtyRedrawNs = 100'000'000;  // 10 redraws a second are smooth enough
}  // namespace

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total == 0 ? 1 : total),
      enabled_(enabled),
      tty_(::isatty(STDOUT_FILENO) != 0),
      start_ns_(mono_ns()) {}

void Progress::update(uint64_t done, const std::string& note) {
  if (!enabled_ || finished_) return;
  uint64_t now = mono_ns();
  double secs = static_cast<double>(now - start_ns_) * 1e-9;
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  uint64_t pct = done * 100 / total_;
  if (tty_) {
    if (now - last_draw_ns_ < kTtyRedrawNs && note.empty() && done < total_) return;
    last_draw_ns_ = now;
    int filled = static_cast<int>(done * kBarWidth / total_);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kBarWidth, '.');
    fmt::print("\r{} [{}] {:3}% {}/{} {:.0f} rec/s {}\033[K", label_, bar, pct, done, total_, rate,
               note);
    std::fflush(stdout);
    return;
  }
  // Not a terminal: a line per 10% (or when there is a note to tell).
  if (note.empty() && done * 10 < next_decile_ * total_) return;
  while (next_decile_ <= 10 && done * 10 >= next_decile_ * total_) ++next_decile_;
  fmt::print("{}: {}/{} ({}%) {:.0f} rec/s{}{}\n", label_, done, total_, pct, rate,
             note.empty() ? "" : " - ", note);
  std::fflush(stdout);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (tty_) {
    fmt::print("\n");
    std::fflush(stdout);
  }
}

}  // namespace rdmarepl::kvdemo
