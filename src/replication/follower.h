// The follower engine: per shard two generations of a receive ring and of a large-record
// buffer (registered for remote write and advertised in the handshake; each new connection
// writes to the generation the previous one did not use), the connection from the leader,
// and the applied seq used to skip duplicates after a reconnect. The engine keeps the data
// path: polling the carriers, authenticating and applying batches, acknowledging. Its parts
// are FollowerSessions (handshakes and the session's carriers; AcceptHost),
// FollowerLog (the write-ahead log and the leader epoch file) and ShippedCheckpoints
// (checkpoint chunks and their install). See docs/replication.md.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core_base.h"
#include "durability.h"
#include "follower_sessions.h"
#include "follower_shard.h"
#include "follower_ship.h"
#include "follower_wal.h"

namespace rdmarepl::replication::detail {

class Follower final : public CoreBase, private AcceptHost {
 public:
  static Result<std::unique_ptr<ChannelCore>> create(const ChannelOptions& options,
                                                     std::unique_ptr<transport::Transport> t,
                                                     const StoreHooks& store);
  ~Follower() override { close(); }

  WriteResult write(Op, std::string_view, std::string_view) noexcept override {
    return WriteResult{{}, WriteStatus::not_leader};
  }
  void flush() noexcept override {}
  [[nodiscard]] bool committed(Ticket) const noexcept override { return false; }
  Status wait(Ticket, std::chrono::milliseconds) override;
  Status wait_all_acked(std::chrono::milliseconds) override;
  Status on_commit(Ticket, CommitFn, void*) override {
    return Error(Errc::invalid_argument,
                 "on_commit() is a leader call; a follower channel has no writes to commit");
  }
  size_t progress() noexcept override;
  void close() noexcept override;

 protected:
  void wait_for_work(std::chrono::microseconds timeout) noexcept override;
  void shard_metrics(MetricsSnapshot& m) const override;

 public:
  [[nodiscard]] transport::Endpoint local_endpoint() const override { return endpoint_; }
  [[nodiscard]] uint64_t last_seq(uint32_t shard) const noexcept override {
    return applied_seq(shard);
  }
  [[nodiscard]] uint64_t applied_seq(uint32_t shard) const noexcept override {
    return shards_[shard]->applied.load(std::memory_order_acquire);
  }

  [[nodiscard]] Wal* wal() const noexcept { return log_.wal(); }

 private:
  using Shard = FollowerShard;
  using Carrier = FollowerCarrier;

  Follower(const ChannelOptions& options, std::unique_ptr<transport::Transport> t,
           const StoreHooks& store)
      : CoreBase(options, std::move(t)),
        store_(store.store),
        apply_batch_(store.apply_batch),
        hooks_(store),
        log_(options_, metrics_, hooks_, shards_, endpoint_),
        sessions_(options_, metrics_, memory_, shards_, log_, endpoint_, *this),
        ship_(options_, metrics_, hooks_, shards_, log_, sessions_, endpoint_) {}

  // Both generations of every shard's ring and large-record buffer, at create().
  Status make_shards();
  // Polls one carrier and applies what arrived. Caller holds sessions_.mu().
  size_t poll_carrier(Carrier& c) noexcept;
  // With a pre-shared key: checks the tag of the write `imm` announced (`byte_len` bytes,
  // the tag last) before anything of it is looked at, and takes the tag off `byte_len`;
  // false (and `why`) when it fails. Shard lock held.
  bool authenticate(Shard& s, Carrier& c, uint32_t imm, uint32_t& byte_len,
                    std::string& why) noexcept;
  // Handles one message of the leader for shard `s` that arrived on `c` (shard lock held).
  bool handle_message(Shard& s, Carrier& c, uint32_t imm, uint32_t byte_len, std::string& why,
                      bool& protocol) noexcept;
  // Checks and applies the batch a completion announced; false (and `why`) on a protocol error.
  bool handle_batch(Shard& s, uint32_t imm, uint32_t byte_len, std::string& why) noexcept;
  // Where the batch announced by `imm` starts (`bytes` to the end of its buffer; `offset` in
  // the ring); false (and `why`) when the immediate or the offset break the protocol.
  bool locate_batch(Shard& s, uint32_t imm, std::span<const std::byte>& bytes, uint64_t& offset,
                    std::string& why) noexcept;
  // Sends an acknowledgement when there is something to acknowledge; 1 when it did.
  size_t send_ack(Shard& s) noexcept;

  // AcceptHost.
  [[nodiscard]] bool accepting() const noexcept override { return !stopping(); }
  bool checkpoint_waiting() noexcept override { return ship_.waiting(); }
  void install_shipped() noexcept override { ship_.install_shipped(); }

  void* store_;
  ApplyBatchFn apply_batch_;
  StoreHooks hooks_;
  transport::Endpoint endpoint_;
  // Destroyed in reverse order: the parts that refer to the shards go first, the session's
  // carriers (which the shards' `conn` point to) before the shards, the log after them.
  FollowerLog log_;
  FollowerShards shards_;
  FollowerSessions sessions_;
  ShippedCheckpoints ship_;
  std::atomic<bool> closed_{false};
};

}  // namespace rdmarepl::replication::detail
