// Counters of one ReplicationChannel: a plain struct of atomics updated on the data path
// with relaxed increments, and a snapshot() for reporting.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "rdmarepl/metrics/histogram.h"

namespace rdmarepl::replication {

// Followers per leader; bounds fixed-size per-follower arrays (a replica set is small).
inline constexpr uint32_t kMaxFollowers = 16;

struct MetricsSnapshot {
  uint64_t records_replicated = 0;     // leader: records accepted by replicate()/erase()
  uint64_t bytes_replicated = 0;       // leader: encoded record bytes
  uint64_t batches_sealed = 0;         // leader: batches closed (each is sent once per follower)
  uint64_t batches_sent = 0;           // leader: batch writes posted, over all followers
  uint64_t batches_resent = 0;         // leader: of which catch-up resends after a reconnect
  uint64_t credit_stalls = 0;          // leader: a batch waited for ring space or queue depth
  uint64_t window_stalls = 0;          // leader: replicate() waited for the retained window
  uint64_t queue_depth = 0;            // leader: sealed batches not yet acked by every follower
  uint64_t reconnects = 0;             // connections (re)established after the first
  uint64_t protocol_errors = 0;        // bad batches / immediates (connection dropped)
  uint64_t records_applied = 0;        // follower: Store::apply calls
  uint64_t records_skipped = 0;        // follower: duplicates skipped after a reconnect
  uint64_t batches_applied = 0;        // follower
  uint64_t checkpoints_shipped = 0;    // leader: checkpoints a follower installed
  uint64_t checkpoints_installed = 0;  // follower: checkpoints received and installed
  uint64_t knob_changes = 0;           // apply_knobs() calls that changed at least one setting
  uint64_t worker_changes = 0;         // of which changed the number of poller threads
  uint64_t tuner_decisions = 0;        // decisions made by the channel's tuner
  uint32_t followers = 0;
  std::array<uint64_t, kMaxFollowers> follower_lag{};  // leader: records not yet acked
  std::array<bool, kMaxFollowers> follower_connected{};
  metrics::Histogram::Snapshot batch_bytes;     // sealed batch sizes
  metrics::Histogram::Snapshot batch_records;   // records per sealed batch
  metrics::Histogram::Snapshot ack_latency_ns;  // replicate() -> committed under the ack mode
};

struct ChannelMetrics {
  std::atomic<uint64_t> records_replicated{0};
  std::atomic<uint64_t> bytes_replicated{0};
  std::atomic<uint64_t> batches_sealed{0};
  std::atomic<uint64_t> batches_sent{0};
  std::atomic<uint64_t> batches_resent{0};
  std::atomic<uint64_t> credit_stalls{0};
  std::atomic<uint64_t> window_stalls{0};
  std::atomic<uint64_t> queue_depth{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> records_applied{0};
  std::atomic<uint64_t> records_skipped{0};
  std::atomic<uint64_t> batches_applied{0};
  std::atomic<uint64_t> checkpoints_shipped{0};
  std::atomic<uint64_t> checkpoints_installed{0};
  std::atomic<uint64_t> knob_changes{0};
  std::atomic<uint64_t> worker_changes{0};
  std::atomic<uint64_t> tuner_decisions{0};
  std::atomic<uint32_t> followers{0};
  std::array<std::atomic<uint64_t>, kMaxFollowers> follower_lag{};
  std::array<std::atomic<bool>, kMaxFollowers> follower_connected{};
  metrics::Histogram batch_bytes;
  metrics::Histogram batch_records;
  metrics::Histogram ack_latency_ns;

  static void add(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
    c.fetch_add(n, std::memory_order_relaxed);
  }

  [[nodiscard]] MetricsSnapshot snapshot() const noexcept {
    MetricsSnapshot s;
    auto ld = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    s.records_replicated = ld(records_replicated);
    s.bytes_replicated = ld(bytes_replicated);
    s.batches_sealed = ld(batches_sealed);
    s.batches_sent = ld(batches_sent);
    s.batches_resent = ld(batches_resent);
    s.credit_stalls = ld(credit_stalls);
    s.window_stalls = ld(window_stalls);
    s.queue_depth = ld(queue_depth);
    s.reconnects = ld(reconnects);
    s.protocol_errors = ld(protocol_errors);
    s.records_applied = ld(records_applied);
    s.records_skipped = ld(records_skipped);
    s.batches_applied = ld(batches_applied);
    s.checkpoints_shipped = ld(checkpoints_shipped);
    s.checkpoints_installed = ld(checkpoints_installed);
    s.knob_changes = ld(knob_changes);
    s.worker_changes = ld(worker_changes);
    s.tuner_decisions = ld(tuner_decisions);
    s.followers = followers.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < kMaxFollowers; ++i) {
      s.follower_lag[i] = ld(follower_lag[i]);
      s.follower_connected[i] = follower_connected[i].load(std::memory_order_relaxed);
    }
    s.batch_bytes = batch_bytes.snapshot();
    s.batch_records = batch_records.snapshot();
    s.ack_latency_ns = ack_latency_ns.snapshot();
    return s;
  }
};

}  // namespace rdmarepl::replication
