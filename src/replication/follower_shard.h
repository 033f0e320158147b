// One shard of the follower and one carrier (connection) of its session: two generations
// of the shard's receive ring and large-record buffer, the applied and acknowledged seqs,
// the write-ahead log's pending syncs and the checkpoint being received. Fields without
// atomics are guarded by `mu`. See docs/replication.md, "Reconnecting" and "Carriers".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "channel_memory.h"
#include "follower_chunks.h"
#include "hello.h"
#include "rdmarepl/replication/options.h"
#include "registered_buffer.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

// One connection of the session and, with a pre-shared key, what checks the leader's
// writes on it (`mac`) and what authenticates ours (`reply_mac`: each acknowledgement and
// checkpoint reply is a 16-byte tag written into the leader's slot `counter mod slots`
// of `reply_slots`, from our own slot of `tags`).
struct FollowerCarrier {
  std::unique_ptr<transport::Connection> conn;
  WriteMac mac;
  WriteMac reply_mac;
  RegisteredBuffer tags;
  transport::RemoteRegion reply_slots{};
  // Wraps a newly accepted connection (its session keys armed when `options` has a
  // pre-shared key; its tags taken from `memory`); on error `conn` is left.
  static Result<std::unique_ptr<FollowerCarrier>> wrap(std::unique_ptr<transport::Connection>& conn,
                                                       const ChannelOptions& options,
                                                       ChannelMemory& memory);
  // Posts an acknowledgement or checkpoint reply with immediate `imm` (unsignaled).
  transport::PostStatus post_reply(uint32_t imm) noexcept;
};

struct FollowerShard {
  std::mutex mu;
  uint32_t index = 0;
  // Two generations of each buffer: the connection installed last writes to `gen`, a new
  // one (which may write before install() runs) to the other, never into bytes the poller
  // may still be reading for the old connection (docs/replication.md, "Reconnecting").
  RegisteredBuffer rings[kBufferGenerations];
  RegisteredBuffer larges[kBufferGenerations];
  uint32_t gen = 1;  // the first connection gets generation 0
  [[nodiscard]] RegisteredBuffer& ring() noexcept { return rings[gen]; }
  [[nodiscard]] RegisteredBuffer& large() noexcept { return larges[gen]; }
  [[nodiscard]] uint32_t next_gen() const noexcept { return 1 - gen; }
  // The carrier (one of the session's) its last batch or chunk arrived on: its acks and
  // checkpoint replies go back there. Null outside a session.
  FollowerCarrier* conn = nullptr;
  std::string leader;   // node id of the connected leader, for messages
  uint64_t cursor = 0;  // where the next ring batch is expected (or 0 after a wrap)
  std::atomic<uint64_t> applied{0};
  // Records and encoded record bytes applied on this shard (duplicates skipped after a
  // reconnect excluded): its part of records_applied and bytes_applied.
  std::atomic<uint64_t> records_applied{0};
  std::atomic<uint64_t> bytes_applied{0};
  std::atomic<uint64_t> batches_applied{0};  // its part of batches_applied
  // What this shard acknowledges and reports as its resume point: `applied`, or with
  // Durability::batch the last applied seq whose batch the write-ahead log has synced.
  std::atomic<uint64_t> acked{0};
  // Logged batches waiting for their sync (Durability::batch): circular, oldest first.
  struct Pending {
    uint64_t lsn = 0;
    uint64_t last_seq = 0;
  };
  std::vector<Pending> pending;
  size_t pending_head = 0;
  size_t pending_count = 0;
  uint64_t durable_seq = 0;
  // Batches received on this connection not yet answered by an acknowledgement: never
  // more acks than batches, so the leader's posted receives always suffice.
  uint32_t unacked_batches = 0;
  uint64_t last_ack_sent = 0;
  // The last seq of the newest batch taken from the ring or large buffer on this
  // connection. Acknowledgements never go past it: the leader frees ring space by
  // acknowledged seq, and after a reconnect it resends batches whose records this side
  // may already have applied through the old connection; acknowledging `applied` then
  // would free ring space still holding batches not yet read.
  uint64_t consumed_seq = 0;
  // A checkpoint being received on this connection (ImmKind::checkpoint chunks), until
  // the accept thread installed it.
  IncomingCheckpoint ship;
};

using FollowerShards = std::vector<std::unique_ptr<FollowerShard>>;

// Runs `fn` with every shard locked (in index order).
inline void lock_all(const FollowerShards& shards, const std::function<void()>& fn) {
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(shards.size());
  for (auto& sp : shards) locks.emplace_back(sp->mu);
  fn();
}

}  // namespace rdmarepl::replication::detail
