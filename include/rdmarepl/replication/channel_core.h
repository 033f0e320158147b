// The untyped engine behind ReplicationChannel<Store>: batching, rings, credits, acks and
// catch-up live in src/replication/ and know the store only through an apply function.
// Users hold a ReplicationChannel<Store>; this header is its implementation detail.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/store.h"
#include "rdmarepl/replication/ticket.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication {

// Called by a follower for each record, in seq order per shard (and by any channel that
// recovers from its write-ahead log). `store` is opaque here.
using ApplyFn = void (*)(void* store, const Record& record);
// The optional checkpoint hooks of a SnapshottableStore (null when the store has none).
using SnapshotFn = Status (*)(void* store, SnapshotWriter& out);
using RestoreFn = Status (*)(void* store, SnapshotReader& in);

struct StoreHooks {
  void* store = nullptr;
  ApplyFn apply = nullptr;
  SnapshotFn snapshot = nullptr;
  RestoreFn restore = nullptr;
};

class ChannelCore {
 public:
  virtual ~ChannelCore() = default;

  // Builds a leader or follower engine. `transport` may be null: then one is chosen from
  // options.transport (see select_transport()). Registers all memory up front.
  static Result<std::unique_ptr<ChannelCore>> create(
      const ChannelOptions& options, std::unique_ptr<transport::Transport> transport,
      const StoreHooks& store);

  virtual WriteResult write(Op op, std::string_view key, std::string_view value) noexcept = 0;
  virtual void flush() noexcept = 0;
  [[nodiscard]] virtual bool committed(Ticket ticket) const noexcept = 0;
  virtual Status wait(Ticket ticket, std::chrono::milliseconds timeout) = 0;
  virtual Status wait_all_acked(std::chrono::milliseconds timeout) = 0;
  virtual size_t progress() noexcept = 0;
  virtual void close() noexcept = 0;

  [[nodiscard]] virtual MetricsSnapshot metrics() const noexcept = 0;
  [[nodiscard]] virtual transport::Endpoint local_endpoint() const = 0;
  [[nodiscard]] virtual uint64_t last_seq(uint32_t shard) const noexcept = 0;
  [[nodiscard]] virtual uint64_t applied_seq(uint32_t shard) const noexcept = 0;
  [[nodiscard]] virtual std::string_view transport_name() const noexcept = 0;
  [[nodiscard]] virtual const ChannelOptions& options() const noexcept = 0;
};

}  // namespace rdmarepl::replication
