#include "rdmarepl/metrics/prometheus/histogram_buckets.h"

#include <limits>

namespace rdmarepl::metrics {

prometheus::ClientMetric::Histogram to_prometheus(const Histogram::Snapshot& s, double scale) {
  prometheus::ClientMetric::Histogram h;
  h.sample_count = s.count;
  h.sample_sum = static_cast<double>(s.sum) * scale;
  h.bucket.reserve(kPrometheusBucketPowers + 1);
  uint64_t cumulative = 0;
  unsigned next = 0;  // the first internal bucket not yet added
  for (unsigned k = 1; k <= kPrometheusBucketPowers; ++k) {
    const uint64_t bound = (uint64_t{1} << k) - 1;
    // Internal buckets below bucket_of(2^k) hold exactly the values <= 2^k - 1.
    const unsigned end = Histogram::bucket_of(uint64_t{1} << k);
    for (; next < end; ++next) cumulative += s.buckets[next];
    h.bucket.push_back({cumulative, static_cast<double>(bound) * scale});
  }
  // +Inf holds every sample; taken from the count so that le="+Inf" equals _count.
  h.bucket.push_back({s.count, std::numeric_limits<double>::infinity()});
  return h;
}

}  // namespace rdmarepl::metrics
