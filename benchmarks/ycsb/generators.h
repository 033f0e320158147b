// YCSB's request distributions (core workloads, site.ycsb.generator): zipfian with
// constant 0.99 over the record count, scrambled by a 64-bit FNV hash as YCSB's
// "zipfian" request distribution does; uniform; and "latest" (skewed towards the most
// recently inserted record).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>

namespace rdmarepl::ycsb {

inline constexpr double kZipfianConstant = 0.99;

// Gray et al., "Quickly generating billion-record synthetic databases" (as in YCSB's
// ZipfianGenerator): item 0 is the most popular.
class Zipfian {
 public:
  explicit Zipfian(uint64_t items, double theta = kZipfianConstant) : items_(items), theta_(theta) {
    zetan_ = zeta(items, theta);
    const double zeta2 = zeta(2, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(items), 1 - theta)) / (1 - zeta2 / zetan_);
  }
  template <class Rng>
  uint64_t next(Rng& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    const auto v =
        static_cast<uint64_t>(static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1, alpha_));
    return v < items_ ? v : items_ - 1;
  }
  [[nodiscard]] uint64_t items() const noexcept { return items_; }

 private:
  static double zeta(uint64_t n, double theta) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
    return sum;
  }
  uint64_t items_;
  double theta_;
  double zetan_ = 0, alpha_ = 0, eta_ = 0;
};

inline uint64_t fnv64(uint64_t v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    h *= 1099511628211ULL;
    v >>= 8;
  }
  return h;
}

enum class Distribution { zipfian, uniform, latest };

// Picks the record a read or update touches. `inserted` is how many records exist now
// (workload D inserts more while it runs).
class KeyChooser {
 public:
  KeyChooser(Distribution d, uint64_t records) : dist_(d), zipf_(records) {}
  template <class Rng>
  uint64_t next(Rng& rng, uint64_t inserted) const {
    switch (dist_) {
      case Distribution::uniform:
        return std::uniform_int_distribution<uint64_t>(0, inserted - 1)(rng);
      case Distribution::zipfian:  // scrambled, as YCSB's "zipfian"
        return fnv64(zipf_.next(rng)) % inserted;
      case Distribution::latest: {  // SkewedLatestGenerator: max - zipfian(max)
        const uint64_t back = zipf_.next(rng) % inserted;
        return inserted - 1 - back;
      }
    }
    return 0;
  }

 private:
  Distribution dist_;
  Zipfian zipf_;
};

}  // namespace rdmarepl::ycsb
