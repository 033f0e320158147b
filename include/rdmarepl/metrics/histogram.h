// A small lock-free histogram for latencies and sizes: log-linear buckets (each power of two
// split into 8 linear steps, so a reported percentile is within 12.5% of the true value).
// record() is one relaxed atomic increment: safe on the data path from any thread.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace rdmarepl::metrics {

class Histogram {
 public:
  static constexpr unsigned kSubBits = 3;  // 8 steps per power of two
  static constexpr unsigned kSub = 1u << kSubBits;
  static constexpr unsigned kBuckets = (64 - kSubBits + 1) * kSub;

  void record(uint64_t value, uint64_t count = 1) noexcept {
    buckets_[bucket_of(value)].fetch_add(count, std::memory_order_relaxed);
    count_.fetch_add(count, std::memory_order_relaxed);
    sum_.fetch_add(value * count, std::memory_order_relaxed);
    uint64_t m = max_.load(std::memory_order_relaxed);
    while (value > m && !max_.compare_exchange_weak(m, value, std::memory_order_relaxed)) {
    }
  }

  // A consistent-enough copy for reporting (concurrent records may be half included).
  struct Snapshot {
    std::array<uint64_t, kBuckets> buckets{};
    uint64_t count = 0;
    uint64_t sum = 0;
    uint64_t max = 0;

    // Adds `o` in: the snapshot of one histogram that recorded both's values.
    void add(const Snapshot& o) noexcept {
      for (unsigned b = 0; b < kBuckets; ++b) buckets[b] += o.buckets[b];
      count += o.count;
      sum += o.sum;
      if (o.max > max) max = o.max;
    }

    [[nodiscard]] double mean() const noexcept {
      return count == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(count);
    }
    // The upper bound of the bucket holding the q-quantile (q in [0, 1]); 0 when empty.
    [[nodiscard]] uint64_t percentile(double q) const noexcept {
      if (count == 0) return 0;
      auto rank = static_cast<uint64_t>(q * static_cast<double>(count - 1)) + 1;
      uint64_t seen = 0;
      for (unsigned b = 0; b < kBuckets; ++b) {
        seen += buckets[b];
        if (seen >= rank) {
          uint64_t upper = bucket_upper(b);
          return upper < max ? upper : max;
        }
      }
      return max;
    }
    [[nodiscard]] uint64_t p50() const noexcept { return percentile(0.50); }
    [[nodiscard]] uint64_t p99() const noexcept { return percentile(0.99); }
    [[nodiscard]] uint64_t p999() const noexcept { return percentile(0.999); }
  };

  [[nodiscard]] Snapshot snapshot() const noexcept {
    Snapshot s;
    for (unsigned b = 0; b < kBuckets; ++b)
      s.buckets[b] = buckets_[b].load(std::memory_order_relaxed);
    s.count = count_.load(std::memory_order_relaxed);
    s.sum = sum_.load(std::memory_order_relaxed);
    s.max = max_.load(std::memory_order_relaxed);
    return s;
  }

  void reset() noexcept {
    for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
    sum_.store(0, std::memory_order_relaxed);
    max_.store(0, std::memory_order_relaxed);
  }

  // Values below kSub get one bucket each; above, bucket = (exponent, top kSubBits mantissa).
  static constexpr unsigned bucket_of(uint64_t v) noexcept {
    if (v < kSub) return static_cast<unsigned>(v);
    unsigned exp = 63u - static_cast<unsigned>(std::countl_zero(v));  // >= kSubBits
    unsigned sub = static_cast<unsigned>(v >> (exp - kSubBits)) & (kSub - 1);
    return (exp - kSubBits + 1) * kSub + sub;
  }
  // Largest value that falls in bucket b.
  static constexpr uint64_t bucket_upper(unsigned b) noexcept {
    if (b < kSub) return b;
    unsigned exp = b / kSub + kSubBits - 1;
    uint64_t sub = b % kSub;
    uint64_t lower = (uint64_t{1} << exp) | (sub << (exp - kSubBits));
    return lower + (uint64_t{1} << (exp - kSubBits)) - 1;
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace rdmarepl::metrics
