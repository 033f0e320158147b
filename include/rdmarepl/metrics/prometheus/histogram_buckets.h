// A metrics::Histogram snapshot as a Prometheus histogram: cumulative `le` buckets derived
// from the internal log-linear buckets (no second histogram is kept). The exported bounds
// are the powers of two: `le` = (2^k - 1) * scale for k = 1 .. kPrometheusBucketPowers,
// then +Inf. Every internal bucket lies wholly below or above each of them, so every
// exported cumulative count is exact.
#pragma once

#include <prometheus/client_metric.h>

#include "rdmarepl/metrics/histogram.h"

namespace rdmarepl::metrics {

// 2^40 ns is about 18 minutes, 2^40 bytes 1 TiB: beyond any latency or size we record.
inline constexpr unsigned kPrometheusBucketPowers = 40;

// `scale` converts the recorded unit to the exported base unit (1e-9: nanoseconds to
// seconds). Sum and bounds are scaled; counts are not.
prometheus::ClientMetric::Histogram to_prometheus(const Histogram::Snapshot& s, double scale);

}  // namespace rdmarepl::metrics
