// Counters of one ReplicationChannel: a plain struct of atomics updated on the data path
// with relaxed increments, and a snapshot() for reporting (the per-shard entries are
// filled by the engine, which owns the per-shard state). The fields come from the lists
// in metric_fields.h; kMetricFields and kHistogramFields describe them for writers.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "rdmarepl/metrics/histogram.h"
#include "rdmarepl/replication/metric_fields.h"

namespace rdmarepl::replication {

// Followers per leader; bounds fixed-size per-follower arrays (a replica set is small).
inline constexpr uint32_t kMaxFollowers = 16;

struct MetricsSnapshot {
#define RDMAREPL_METRIC_(name, kind, unit, help) uint64_t name = 0;
  RDMAREPL_CHANNEL_METRICS(RDMAREPL_METRIC_)
#undef RDMAREPL_METRIC_
  std::array<uint64_t, kMaxFollowers> follower_lag{};  // leader: records not yet acked
  // Leader: bytes of sealed batches not yet acked, counted over the retained windows (a
  // follower caught up from the log counts the windows whole).
  std::array<uint64_t, kMaxFollowers> follower_lag_bytes{};
  std::array<bool, kMaxFollowers> follower_connected{};
  // Per shard (ChannelOptions::shards entries). shard_seq: leader, the last seq assigned;
  // follower, the last seq applied. shard_lag: leader, the records of that shard the
  // slowest follower has not acknowledged (empty on a follower).
  std::vector<uint64_t> shard_seq;
  std::vector<uint64_t> shard_lag;
  // Per shard: leader, the records and encoded record bytes replicated (the shard's part of
  // records_replicated / bytes_replicated); follower, applied (records_applied /
  // bytes_applied).
  std::vector<uint64_t> shard_records;
  std::vector<uint64_t> shard_bytes;
  // Leader, per shard and follower (entry `shard * followers + follower`): the records the
  // follower has not acknowledged on that shard, and the bytes of that shard's sealed
  // batches after its acknowledged seq. Refreshed by each progress round, like
  // follower_lag, which is their sum over the shards. Empty on a follower.
  std::vector<uint64_t> link_lag;
  std::vector<uint64_t> link_lag_bytes;
  // Leader, per shard and follower (the same entries): that link's part of batches_sent,
  // credit_stalls, reconnects and catchup_bytes. Empty on a follower.
  std::vector<uint64_t> link_batches_sent;
  std::vector<uint64_t> link_credit_stalls;
  std::vector<uint64_t> link_reconnects;
  std::vector<uint64_t> link_catchup_bytes;
  // Per shard: leader, the batches sealed on the shard (its part of batches_sealed);
  // follower, the batches applied (batches_applied).
  std::vector<uint64_t> shard_batches;
  // Leader, per shard: its part of window_stalls (replicate() waited for that shard's
  // retained window). Empty on a follower.
  std::vector<uint64_t> shard_window_stalls;
#define RDMAREPL_HISTOGRAM_(name, unit, help) metrics::Histogram::Snapshot name;
  RDMAREPL_CHANNEL_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
  RDMAREPL_SHARD_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
#undef RDMAREPL_HISTOGRAM_
  // Per shard, the histograms of RDMAREPL_SHARD_HISTOGRAMS (shard_ack_latency_ns: leader,
  // replicate() -> committed of the shard's records). Empty on a follower.
#define RDMAREPL_SHARD_HISTOGRAM_(name, unit, help) \
  std::vector<metrics::Histogram::Snapshot> shard_##name;
  RDMAREPL_SHARD_HISTOGRAMS(RDMAREPL_SHARD_HISTOGRAM_)
#undef RDMAREPL_SHARD_HISTOGRAM_
};

enum class MetricKind : uint8_t { counter, gauge };
constexpr std::string_view to_string(MetricKind k) noexcept {
  return k == MetricKind::counter ? "counter" : "gauge";
}

// One scalar field of MetricsSnapshot: `snapshot.*member` is its value.
struct MetricField {
  std::string_view name;
  uint64_t MetricsSnapshot::*member;
  MetricKind kind;
  std::string_view unit;
  std::string_view help;
};

// One histogram of MetricsSnapshot.
struct HistogramField {
  std::string_view name;
  metrics::Histogram::Snapshot MetricsSnapshot::*member;
  std::string_view unit;
  std::string_view help;
};

// One histogram kept per shard: `snapshot.*shards` holds one entry per shard and
// `snapshot.*total` their sum (a field of kHistogramFields too).
struct ShardHistogramField {
  std::string_view name;
  std::vector<metrics::Histogram::Snapshot> MetricsSnapshot::*shards;
  metrics::Histogram::Snapshot MetricsSnapshot::*total;
  std::string_view unit;
  std::string_view help;
};

// Every scalar metric and every histogram (the channel's, then the per-shard ones' totals),
// in declaration order.
inline constexpr MetricField kMetricFields[] = {
#define RDMAREPL_METRIC_(name, kind, unit, help) \
  MetricField{#name, &MetricsSnapshot::name, MetricKind::kind, unit, help},
    RDMAREPL_CHANNEL_METRICS(RDMAREPL_METRIC_)
#undef RDMAREPL_METRIC_
};
inline constexpr HistogramField kHistogramFields[] = {
#define RDMAREPL_HISTOGRAM_(name, unit, help) \
  HistogramField{#name, &MetricsSnapshot::name, unit, help},
    RDMAREPL_CHANNEL_HISTOGRAMS(RDMAREPL_HISTOGRAM_) RDMAREPL_SHARD_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
#undef RDMAREPL_HISTOGRAM_
};
inline constexpr ShardHistogramField kShardHistogramFields[] = {
#define RDMAREPL_SHARD_HISTOGRAM_(name, unit, help) \
  ShardHistogramField{#name, &MetricsSnapshot::shard_##name, &MetricsSnapshot::name, unit, help},
    RDMAREPL_SHARD_HISTOGRAMS(RDMAREPL_SHARD_HISTOGRAM_)
#undef RDMAREPL_SHARD_HISTOGRAM_
};

// Sets the channel-wide field of each per-shard histogram to the sum of its shards'
// (control plane: after the engine filled the per-shard entries).
inline void sum_shard_histograms(MetricsSnapshot& s) noexcept {
  for (const auto& f : kShardHistogramFields) {
    metrics::Histogram::Snapshot total;
    for (const auto& shard : s.*f.shards) total.add(shard);
    s.*f.total = total;
  }
}

struct ChannelMetrics {
#define RDMAREPL_METRIC_(name, kind, unit, help) std::atomic<uint64_t> name{0};
  RDMAREPL_CHANNEL_METRICS(RDMAREPL_METRIC_)
#undef RDMAREPL_METRIC_
  std::array<std::atomic<uint64_t>, kMaxFollowers> follower_lag{};
  std::array<std::atomic<uint64_t>, kMaxFollowers> follower_lag_bytes{};
  std::array<std::atomic<bool>, kMaxFollowers> follower_connected{};
#define RDMAREPL_HISTOGRAM_(name, unit, help) metrics::Histogram name;
  RDMAREPL_CHANNEL_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
#undef RDMAREPL_HISTOGRAM_

  static void add(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
  }

  [[nodiscard]] MetricsSnapshot snapshot() const noexcept {
    MetricsSnapshot s;
    auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
#define RDMAREPL_METRIC_(name, kind, unit, help) s.name = ld(name);
    RDMAREPL_CHANNEL_METRICS(RDMAREPL_METRIC_)
#undef RDMAREPL_METRIC_
    for (uint32_t i = 0; i < kMaxFollowers; ++i) {
      s.follower_lag[i] = ld(follower_lag[i]);
      s.follower_lag_bytes[i] = ld(follower_lag_bytes[i]);
      s.follower_connected[i] = follower_connected[i].load(std::memory_order_relaxed);
    }
#define RDMAREPL_HISTOGRAM_(name, unit, help) s.name = name.snapshot();
    RDMAREPL_CHANNEL_HISTOGRAMS(RDMAREPL_HISTOGRAM_)
#undef RDMAREPL_HISTOGRAM_
    return s;
  }
};

}  // namespace rdmarepl::replication
