// One shard of the leader: its retained window, the open batch being encoded into it, its
// seqs and commit point, and one Link per follower. Fields without atomics are guarded by
// `mu`. See docs/replication.md, "The data path on the leader".
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "leader_link.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "registered_buffer.h"
#include "retained_window.h"

namespace rdmarepl::replication::detail {

struct Shard {
  std::mutex mu;
  uint32_t index = 0;
  RetainedWindow window;
  RegisteredBuffer ack_target;  // what followers' imm-only acks are addressed to
  RegisteredBuffer staging;     // one batch read back from the log (catch-up), with wal_dir
  uint64_t latency_bn = 0;      // next batch whose commit latency is not yet recorded
  BatchBuilder open;
  bool open_active = false;
  bool open_large = false;  // the open batch holds one record for the large-record buffer
  uint64_t open_offset = 0;
  uint64_t open_consumed = 0;
  uint64_t open_t0 = 0;
  std::atomic<uint64_t> next_seq{1};
  std::atomic<uint64_t> committed{0};
  // Value sizes accepted (written under mu, read by the tuner's observer).
  std::atomic<uint64_t> value_count{0};
  std::atomic<double> value_sum{0};
  std::atomic<double> value_sq{0};
  // Writers blocked on mu: a blocking poller does not start a wait while one is.
  std::atomic<uint32_t> writers_waiting{0};
  uint64_t durable_bn = 0;  // first batch not yet known durable (write-ahead log)
  // The window's bytes in use, refreshed under mu by each progress round (read by the
  // metrics sweep without the lock).
  std::atomic<uint64_t> retained_bytes{0};
  // Records and encoded record bytes accepted on this shard (written under mu, read by the
  // metrics sweep): its part of records_replicated and bytes_replicated.
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> bytes{0};
  // Batches sealed and replicate() waits for the retained window on this shard (written
  // under mu, read by the metrics sweep): its part of batches_sealed and window_stalls.
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> window_stalls{0};
  // replicate() -> committed of this shard's records (recorded by the commit update, one
  // relaxed increment per bucket); the channel's ack_latency_ns is the sum over the shards.
  metrics::Histogram ack_latency_ns;
  void count_replicated(uint64_t n, uint64_t b) noexcept {
    ChannelMetrics::add(records, n);
    ChannelMetrics::add(bytes, b);
  }
  uint64_t durable_seq = 0;
  std::vector<std::unique_ptr<Link>> links;

  // Counts a value of `value_len` bytes accepted (under mu: one writer per shard, so plain
  // load + store is enough).
  void count_value(size_t value_len) noexcept {
    const auto v = static_cast<double>(value_len);
    value_count.store(value_count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    value_sum.store(value_sum.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
    value_sq.store(value_sq.load(std::memory_order_relaxed) + v * v, std::memory_order_relaxed);
  }
  // Takes mu (`lock`, not yet owned) as a writer. A poller in PollingMode::blocking holds the
  // shard lock while it waits for a completion and would take it again right away
  // (std::mutex is not fair), starving the writer for whole windows: the flag makes it skip
  // its next wait until the writer got in.
  void lock_as_writer(std::unique_lock<std::mutex>& lock) noexcept {
    writers_waiting.fetch_add(1, std::memory_order_relaxed);
    lock.lock();
    writers_waiting.fetch_sub(1, std::memory_order_relaxed);
  }

  // The last seq of a sealed batch (the open batch's records are not sealed yet).
  [[nodiscard]] uint64_t sealed_last() const noexcept {
    return (open_active ? open.first_seq() : next_seq.load(std::memory_order_relaxed)) - 1;
  }
  // Where a follower resuming after `resume` continues: the window's batch number, or
  // nullopt when the window no longer reaches back that far.
  [[nodiscard]] std::optional<uint64_t> window_resume(uint64_t resume) const noexcept {
    if (resume >= sealed_last()) return window.end_bn();
    return window.find_after(resume);
  }
};

}  // namespace rdmarepl::replication::detail
