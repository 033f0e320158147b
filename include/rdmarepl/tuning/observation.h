// Observation: the live numbers of one measurement window, as a tuner sees them.
#pragma once

#include <cstdint>
#include <optional>

namespace rdmarepl::tuning {

// RNIC counters as rates over the window. A counter the device does not expose (or a
// transport without a device, such as TCP) is std::nullopt, never zero.
struct DeviceRates {
  std::optional<double> tx_bytes_per_s;  // port_xmit_data (x4: sysfs counts 32-bit words)
  std::optional<double> rx_bytes_per_s;  // port_rcv_data (x4)
  std::optional<double> tx_wait_per_s;   // port_xmit_wait: ticks the port had data but no credit
  // hw_counters: packet_seq_err + local_ack_timeout_err + ... (mlx5), completer_retry_err (rxe)
  std::optional<double> retransmits_per_s;
  std::optional<double>
      rnr_naks_per_s;  // hw_counters: rnr_nak_retry_err (mlx5), rcvd_rnr_err (rxe)
  // Transmitted bytes over the ports' rate (0..1): port_xmit_data x4 per second over the sum
  // of the ports' `rate` files. Absent when no port states its rate.
  std::optional<double> link_utilization;
};

// One window of live numbers. Latencies are replicate-to-ack times. Values the source cannot
// measure are std::nullopt; features derived from them become NaN ("missing") for a model.
struct Observation {
  double window_s = 0;  // length of the window these numbers cover

  // Replicate-to-ack latency percentiles (microseconds).
  double latency_p50_us = 0;
  double latency_p90_us = 0;
  double latency_p99_us = 0;

  // Throughput over the window.
  double records_per_s = 0;
  double bytes_per_s = 0;

  // Value sizes of the records replicated in the window.
  double value_mean_bytes = 0;
  double value_stddev_bytes = 0;

  // Backlog at the end of the window, and how often a sender waited for ring credit.
  double queue_depth = 0;  // batches queued but not yet acknowledged, over all shards
  double pending_bytes = 0;
  double credit_stalls_per_s = 0;

  // Process CPU use as a share of the cores this process may run on (0..1); see CpuSampler.
  std::optional<double> cpu_utilization;
  // Estimated memory bandwidth used by replication copies / the machine's peak (0..1).
  std::optional<double> membw_ratio;
  // Registration-cache hit rate (0..1) over the window, when a cache was consulted.
  std::optional<double> reg_cache_hit_rate;
  // p99 of the channel's write-ahead-log syncs in the window (microseconds): absent without
  // a log, or when the log did not sync in the window. Successive windows are its history.
  std::optional<double> wal_sync_p99_us;

  DeviceRates device;
};

// Outcome of one window, the numbers a tuner tries to improve.
struct Outcome {
  double bytes_per_s = 0;
  double latency_p99_us = 0;
};

inline Outcome outcome_of(const Observation& o) noexcept {
  return {o.bytes_per_s, o.latency_p99_us};
}

// Estimates the memory-bandwidth ratio: replication moves `bytes_per_s` and touches each byte
// `copies_per_byte` times (encode, WAL, send); `peak_bytes_per_s` is the machine's memory
// bandwidth (e.g. measured once with a streaming copy). std::nullopt when peak is unknown.
inline std::optional<double> estimate_membw_ratio(double bytes_per_s, double copies_per_byte,
                                                  double peak_bytes_per_s) noexcept {
  if (!(peak_bytes_per_s > 0)) return std::nullopt;
  return bytes_per_s * copies_per_byte / peak_bytes_per_s;
}

}  // namespace rdmarepl::tuning
