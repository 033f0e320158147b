// The leader's write-ahead log (ChannelOptions::wal_dir; every call is a no-op without it):
// recovery at create() (the store, the seqs and the retained window), appending each sealed
// batch before it is sent, the durability gate on sending and eviction, and the catch-up
// thread that streams the log to followers older than the window (leader_catchup.h). The
// Leader owns the log slot and one LeaderLog, and is reached back through LogHost only. See
// docs/replication.md, "Durability".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "channel_memory.h"
#include "durability.h"
#include "leader_catchup.h"
#include "leader_shard.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

// What the log needs of the leader, besides what catch-up needs. Shard lock held, or at
// create() before any thread runs.
class LogHost : public CatchUpHost {
 public:
  // Makes `len` contiguous bytes placeable in the retained window of `s`.
  virtual RetainedWindow::Room make_room(Shard& s, uint64_t len) noexcept = 0;
  // The local segments of batch `d`: what is appended is what goes on the wire.
  [[nodiscard]] virtual transport::WriteRequest batch_bytes(const Shard& s,
                                                            const BatchDesc& d) const noexcept = 0;

 protected:
  ~LogHost() = default;
};

class LeaderLog {
 public:
  // Everything passed must outlive this object; `shards` may be filled after construction.
  // `wal` is the leader's log slot, filled by open().
  LeaderLog(const ChannelOptions& options, ChannelMetrics& metrics, ChannelMemory& memory,
            const StoreHooks& store, std::vector<std::unique_ptr<Shard>>& shards,
            std::unique_ptr<Wal>& wal, LogHost& host)
      : options_(options),
        metrics_(metrics),
        memory_(memory),
        store_(store),
        shards_(shards),
        wal_(wal),
        host_(host) {}
  LeaderLog(const LeaderLog&) = delete;
  LeaderLog& operator=(const LeaderLog&) = delete;

  // Opens the log and recovers the store, the seqs and the retained window from it (the
  // shards must exist).
  Status open();
  // Starts the log's and the catch-up's threads.
  void start();
  // close(): stops catch-up first (before the links go down), then the log.
  void stop_catch_up() noexcept;
  void close() noexcept;

  // Appends sealed batch `d` of `s` (shard lock held), noting its lsn in `d`.
  void seal(Shard& s, BatchDesc& d) noexcept;
  // Write-ahead: whether `d` may be sent (and evicted), that is, the log has it.
  [[nodiscard]] bool sendable(const BatchDesc& d) const noexcept {
    return !wal_ || wal_->durable(d.lsn);
  }

 private:
  // Puts a replayed batch back into the retained window; false when these options cannot
  // send it (written under a larger ring_bytes or max_value_bytes).
  bool recover_batch(const BatchView& v, std::span<const std::byte> bytes) noexcept;

  const ChannelOptions& options_;
  ChannelMetrics& metrics_;
  ChannelMemory& memory_;
  StoreHooks store_;
  std::vector<std::unique_ptr<Shard>>& shards_;
  std::unique_ptr<Wal>& wal_;
  LogHost& host_;
  // Catch-up of followers older than the window, from the log (null without wal_dir).
  std::unique_ptr<CatchUp> catchup_;
};

}  // namespace rdmarepl::replication::detail
