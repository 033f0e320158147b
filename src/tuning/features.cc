#include "rdmarepl/tuning/features.h"

#include <cmath>
#include <limits>

namespace rdmarepl::tuning {

namespace {

float f(double v) noexcept {
  return static_cast<float>(v);
}
float opt(const std::optional<double>& v) noexcept {
  return v ? static_cast<float>(*v) : std::numeric_limits<float>::quiet_NaN();
}

void encode_knobs(const Knobs& k, float* out) noexcept {
  static_assert(kNumKnobFeatures == 6);
  out[0] = f(static_cast<double>(k.batch_bytes));
  out[1] = f(k.flush_delay_us);
  out[2] = f(k.shards);
  out[3] = f(static_cast<int>(k.poll_mode));
  out[4] = f(k.poll_interval_us);
  out[5] = f(static_cast<double>(k.pool_bytes));
}

}  // namespace

const std::array<std::string_view, kNumFeatures>& feature_names() noexcept {
  static constexpr std::array<std::string_view, kNumFeatures> kNames = {"window_s",
                                                                        "lat_p50_us",
                                                                        "lat_p90_us",
                                                                        "lat_p99_us",
                                                                        "records_per_s",
                                                                        "bytes_per_s",
                                                                        "value_mean_bytes",
                                                                        "value_stddev_bytes",
                                                                        "queue_depth",
                                                                        "pending_bytes",
                                                                        "credit_stalls_per_s",
                                                                        "cpu_utilization",
                                                                        "membw_ratio",
                                                                        "reg_cache_hit_rate",
                                                                        "dev_tx_bytes_per_s",
                                                                        "dev_rx_bytes_per_s",
                                                                        "dev_tx_wait_per_s",
                                                                        "dev_retransmits_per_s",
                                                                        "dev_rnr_naks_per_s",
                                                                        "wal_sync_p99_us",
                                                                        "cur_batch_bytes",
                                                                        "cur_flush_delay_us",
                                                                        "cur_shards",
                                                                        "cur_poll_mode",
                                                                        "cur_poll_interval_us",
                                                                        "cur_pool_bytes",
                                                                        "batch_bytes",
                                                                        "flush_delay_us",
                                                                        "shards",
                                                                        "poll_mode",
                                                                        "poll_interval_us",
                                                                        "pool_bytes"};
  return kNames;
}

void encode_features(const Observation& o, const Knobs& observed_under, const Knobs& candidate,
                     float* out) noexcept {
  out[0] = f(o.window_s);
  out[1] = f(o.latency_p50_us);
  out[2] = f(o.latency_p90_us);
  out[3] = f(o.latency_p99_us);
  out[4] = f(o.records_per_s);
  out[5] = f(o.bytes_per_s);
  out[6] = f(o.value_mean_bytes);
  out[7] = f(o.value_stddev_bytes);
  out[8] = f(o.queue_depth);
  out[9] = f(o.pending_bytes);
  out[10] = f(o.credit_stalls_per_s);
  out[11] = opt(o.cpu_utilization);
  out[12] = opt(o.membw_ratio);
  out[13] = opt(o.reg_cache_hit_rate);
  out[14] = opt(o.device.tx_bytes_per_s);
  out[15] = opt(o.device.rx_bytes_per_s);
  out[16] = opt(o.device.tx_wait_per_s);
  out[17] = opt(o.device.retransmits_per_s);
  out[18] = opt(o.device.rnr_naks_per_s);
  out[19] = opt(o.wal_sync_p99_us);
  static_assert(kKnobsInForceOffset == 20, "the observation fills out[0..19]");
  encode_knobs(observed_under, out + kKnobsInForceOffset);
  encode_knobs(candidate, out + kCandidateOffset);
}

void encode_candidate(const Knobs& candidate, float* row) noexcept {
  encode_knobs(candidate, row + kCandidateOffset);
}

}  // namespace rdmarepl::tuning
