// Monotonic clocks. Every timeout and latency in rdmarepl uses these, never wall time.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace rdmarepl {

using Clock = std::chrono::steady_clock;
using Duration = Clock::duration;
using TimePoint = Clock::time_point;

// Nanoseconds from CLOCK_MONOTONIC; cheap (vDSO), safe on the data path.
inline uint64_t mono_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Wall-clock nanoseconds since the Unix epoch, for record timestamps only (never for timing).
inline uint64_t wall_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Measures elapsed time from construction (or the last reset).
class Stopwatch {
 public:
  Stopwatch() noexcept : start_(mono_ns()) {}
  void reset() noexcept { start_ = mono_ns(); }
  [[nodiscard]] uint64_t elapsed_ns() const noexcept { return mono_ns() - start_; }
  [[nodiscard]] double elapsed_s() const noexcept {
    return static_cast<double>(elapsed_ns()) * 1e-9;
  }

 private:
  uint64_t start_;
};

// A deadline on the monotonic clock; Deadline::never() does not expire.
class Deadline {
 public:
  static Deadline after(Duration d) noexcept { return Deadline(Clock::now() + d); }
  static Deadline never() noexcept { return Deadline(TimePoint::max()); }
  [[nodiscard]] bool expired() const noexcept {
    return at_ != TimePoint::max() && Clock::now() >= at_;
  }
  [[nodiscard]] Duration remaining() const noexcept {
    if (at_ == TimePoint::max()) return Duration::max();
    auto now = Clock::now();
    return now >= at_ ? Duration::zero() : at_ - now;
  }
  // Remaining time in whole milliseconds for poll/epoll_wait: -1 when never, 0 when expired.
  [[nodiscard]] int poll_timeout_ms() const noexcept;

 private:
  explicit Deadline(TimePoint at) noexcept : at_(at) {}
  TimePoint at_;
};

inline int Deadline::poll_timeout_ms() const noexcept {
  if (at_ == TimePoint::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(remaining()).count();
  if (ms <= 0) return expired() ? 0 : 1;
  return ms > 1'000'000 ? 1'000'000 : static_cast<int>(ms);
}

}  // namespace rdmarepl
