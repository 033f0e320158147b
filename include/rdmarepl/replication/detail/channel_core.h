// The untyped engine behind ReplicationChannel<Store>: batching, rings, credits, acks and
// catch-up live in src/replication/ and know the store only through an apply function.
// Users hold a ReplicationChannel<Store>; this header is its implementation detail.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/store.h"
#include "rdmarepl/replication/ticket.h"
#include "rdmarepl/transport/transport.h"
#include "rdmarepl/tuning/knobs.h"
#include "rdmarepl/tuning/observation.h"
#include "rdmarepl/tuning/runner.h"

namespace rdmarepl::replication {

// Applies the records of a checked batch whose seq is above `after`, in order, to the store
// (detail::apply_records instantiated for it); returns the last seq applied and counts the
// records at or below `after` in `skipped`. Called by a follower for each batch, and by any
// channel that recovers from its write-ahead log. `store` is opaque here.
using ApplyBatchFn = uint64_t (*)(void* store, const BatchView& batch, uint64_t after,
                                  uint64_t& skipped);
// The optional checkpoint hooks of a SnapshottableStore (null when the store has none).
using SnapshotFn = Status (*)(void* store, SnapshotWriter& out);
using RestoreFn = Status (*)(void* store, SnapshotReader& in);
// The optional durable position of a DurableStore: the last seq of `shard` it holds durably.
using DurableSeqFn = uint64_t (*)(void* store, uint32_t shard);

struct StoreHooks {
  void* store = nullptr;
  ApplyBatchFn apply_batch = nullptr;
  SnapshotFn snapshot = nullptr;
  RestoreFn restore = nullptr;
  DurableSeqFn durable_seq = nullptr;
};

// Called once when a write registered with on_commit() meets the ack mode (`status` ok) or
// can no longer meet it (`status` holds the error: the channel was closed, or, with
// AwayPolicy::fail, a needed follower has been away too long). Must not throw.
using CommitFn = void (*)(void* ctx, Ticket ticket, const Status& status) noexcept;

class ChannelCore {
 public:
  virtual ~ChannelCore() = default;

  // Builds a leader or follower engine. `transport` may be null: then one is chosen from
  // options.transport (see select_transport()). Registers all memory up front.
  static Result<std::unique_ptr<ChannelCore>> create(
      const ChannelOptions& options, std::unique_ptr<transport::Transport> transport,
      const StoreHooks& store);

  virtual WriteResult write(Op op, std::string_view key, std::string_view value) noexcept = 0;
  // A write group (leader): every op in one batch of one shard, with consecutive seqs; the
  // ticket is the last one's. See ReplicationChannel::replicate_group.
  virtual WriteResult write_group(std::span<const GroupOp>) noexcept {
    return WriteResult{{}, WriteStatus::not_leader};
  }
  // The shard `key` maps to, and the largest group replicate_group() accepts (record bytes).
  [[nodiscard]] virtual uint32_t key_shard(std::string_view key) const noexcept = 0;
  [[nodiscard]] virtual size_t group_limit_bytes() const noexcept = 0;
  // Zero-copy values (leader): a registered buffer of `size` bytes from the channel's slab
  // pool, or an empty Buffer (follower, no pool, pool exhausted, size over 1 MiB).
  [[nodiscard]] virtual memory::Buffer allocate(size_t) noexcept { return {}; }
  // Replicates `value`'s bytes under `key` without copying them (see docs/replication.md,
  // "Zero-copy values"). The Buffer is consumed whatever the result.
  virtual WriteResult write_buffer(std::string_view, memory::Buffer&& value) noexcept {
    value.reset();
    return WriteResult{{}, WriteStatus::not_leader};
  }
  // The zero-copy pool's counters (all zero without a pool): registrations stay at the
  // arenas registered by create().
  [[nodiscard]] virtual memory::MemoryStats memory_stats() const { return {}; }
  // Zero-copy batches whose Buffers the retained windows still hold (control plane).
  [[nodiscard]] virtual size_t zero_copy_retained() const { return 0; }
  // The store's own memory (leader; see ReplicationChannel::register_region). Control plane.
  virtual Status register_region(const void*, size_t) {
    return Error(Errc::unsupported,
                 "register_region: only a leader channel sends values from the store's memory; "
                 "register regions on the leader");
  }
  virtual Status unregister_region(const void*, std::chrono::milliseconds) {
    return Error(Errc::unsupported,
                 "unregister_region: only a leader channel has registered store regions");
  }
  [[nodiscard]] virtual size_t region_references(const void*) const { return 0; }
  virtual void flush() noexcept = 0;
  [[nodiscard]] virtual bool committed(Ticket ticket) const noexcept = 0;
  virtual Status wait(Ticket ticket, std::chrono::milliseconds timeout) = 0;
  virtual Status wait_all_acked(std::chrono::milliseconds timeout) = 0;
  // Registers `fn(ctx, ticket, status)` to run when `ticket` meets the ack mode. Runs it at
  // once, on the caller's thread, when the ticket is already committed; otherwise the thread
  // running progress() runs it. Fails (and never runs fn) on a follower, for a ticket of
  // another shard count, on a closed channel, or when ChannelOptions::max_pending_callbacks
  // callbacks of the shard are pending. Never allocates when it succeeds.
  virtual Status on_commit(Ticket ticket, CommitFn fn, void* ctx) = 0;
  virtual size_t progress() noexcept = 0;
  virtual void close() noexcept = 0;

  [[nodiscard]] virtual MetricsSnapshot metrics() const noexcept = 0;
  [[nodiscard]] virtual transport::Endpoint local_endpoint() const = 0;
  [[nodiscard]] virtual uint64_t last_seq(uint32_t shard) const noexcept = 0;
  [[nodiscard]] virtual uint64_t applied_seq(uint32_t shard) const noexcept = 0;
  [[nodiscard]] virtual std::string_view transport_name() const noexcept = 0;
  [[nodiscard]] virtual const ChannelOptions& options() const noexcept = 0;

  // Live knobs (control plane; see docs/replication.md "Live knobs").
  virtual Status apply_knobs(const tuning::Knobs& knobs) = 0;
  [[nodiscard]] virtual tuning::Knobs knobs() const = 0;
  [[nodiscard]] virtual tuning::Observation observe() = 0;
  [[nodiscard]] virtual std::optional<tuning::RunnerStats> tuner_stats() const = 0;
};

}  // namespace rdmarepl::replication
