// The follower engine: per shard two generations of a receive ring and of a large-record
// buffer (registered for remote write and advertised in the handshake; each new connection
// writes to the generation the previous one did not use), the connection from the leader,
// and the applied seq used to skip duplicates after a reconnect. See docs/replication.md.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_ship.h"
#include "core_base.h"
#include "durability.h"
#include "follower_chunks.h"
#include "hello.h"
#include "leader_epoch_file.h"
#include "registered_buffer.h"
#include "write_mac.h"

namespace rdmarepl::replication::detail {

// Threads that run handshakes on a follower (each accepts a peer that has spoken, runs its
// handshake and installs it): a peer that stalls in its handshake holds one of them.
inline constexpr uint32_t kHandshakeThreads = 4;

class Follower final : public CoreBase {
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

  // One connection of the session and, with a pre-shared key, what checks the leader's
  // writes on it (`mac`) and what authenticates ours (`reply_mac`: each acknowledgement and
  // checkpoint reply is a 16-byte tag written into the leader's slot `counter mod slots`
  // of `reply_slots`, from our own slot of `tags`).
  struct Carrier {
    std::unique_ptr<transport::Connection> conn;
    WriteMac mac;
    WriteMac reply_mac;
    RegisteredBuffer tags;
    transport::RemoteRegion reply_slots{};
    // Posts an acknowledgement or checkpoint reply with immediate `imm` (unsignaled).
    transport::PostStatus post_reply(uint32_t imm) noexcept;
  };

 private:
  struct Shard {
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
    // The carrier (one of carriers_) its last batch or chunk arrived on: its acks and
    // checkpoint replies go back there. Null outside a session.
    Carrier* conn = nullptr;
    std::string leader;   // node id of the connected leader, for messages
    uint64_t cursor = 0;  // where the next ring batch is expected (or 0 after a wrap)
    std::atomic<uint64_t> applied{0};
    // Records and encoded record bytes applied on this shard (duplicates skipped after a
    // reconnect excluded): its part of records_applied and bytes_applied.
    std::atomic<uint64_t> records_applied{0};
    std::atomic<uint64_t> bytes_applied{0};
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

  Follower(const ChannelOptions& options, std::unique_ptr<transport::Transport> t,
           const StoreHooks& store)
      : CoreBase(options, std::move(t)),
        store_(store.store),
        apply_batch_(store.apply_batch),
        hooks_(store) {}

  // Polls one carrier and applies what arrived. Caller holds carriers_mu_.
  size_t poll_carrier(Carrier& c) noexcept;
  // With a pre-shared key: checks the tag of the write `imm` announced (`byte_len` bytes,
  // the tag last) before anything of it is looked at, and takes the tag off `byte_len`;
  // false (and `why`) when it fails. Shard lock held.
  bool authenticate(Shard& s, Carrier& c, uint32_t imm, uint32_t& byte_len,
                    std::string& why) noexcept;
  // Wraps a newly accepted connection (its session keys armed); on error `conn` is left.
  Result<std::unique_ptr<Carrier>> carrier(std::unique_ptr<transport::Connection>& conn);
  // Handles one message of the leader for shard `s` that arrived on `c` (shard lock held).
  bool handle_message(Shard& s, Carrier& c, uint32_t imm, uint32_t byte_len, std::string& why,
                      bool& protocol) noexcept;
  // Checks and applies the batch a completion announced; false (and `why`) on a protocol error.
  bool handle_batch(Shard& s, uint32_t imm, uint32_t byte_len, std::string& why) noexcept;
  // Where the batch announced by `imm` starts (`bytes` to the end of its buffer; `offset` in
  // the ring); false (and `why`) when the immediate or the offset break the protocol.
  bool locate_batch(Shard& s, uint32_t imm, std::span<const std::byte>& bytes, uint64_t& offset,
                    std::string& why) noexcept;
  // Ends the session: every carrier closes (the leader reconnects with a new handshake).
  // Caller holds carriers_mu_ (and may hold one shard lock: `held`).
  void drop(std::string_view why, bool protocol_error = false) noexcept;
  // Runs the handshakes: kHandshakeThreads threads (one when the listener cannot accept
  // concurrently), each accepting and installing connections; `first` also installs
  // shipped checkpoints.
  void accept_loop() noexcept;
  void accept_worker(bool first) noexcept;
  [[nodiscard]] transport::ConnectionOptions accept_options();
  // ConnectionOptions::check_peer: refuses, with the reason, a leader whose carrier 0
  // leader_refusal() would refuse; counts it in leaders_refused.
  Status check_leader(std::string_view node, std::string_view address, std::string_view app_data);
  // Why leader `node` (`who` in messages) with `epoch` may not start a session now; empty
  // when it may. Caller holds carriers_mu_.
  [[nodiscard]] std::string leader_refusal(const std::string& node, uint64_t epoch,
                                           const std::string& who) const;
  // The seq a (re)connecting leader resumes after: everything applied, or with
  // Durability::batch what the log has synced. Refreshes `acked`. Caller holds s.mu.
  uint64_t resume_point(Shard& s) noexcept;
  // A probe (probe.h): answered and closed on this handshake thread; counted in
  // probes_answered.
  void answer_probe(std::unique_ptr<transport::Connection> conn) noexcept;
  // `told`: the handshake sent (per-shard resume points and buffer generations).
  void install(std::unique_ptr<transport::Connection> conn, const FollowerHello& told) noexcept;
  // Makes `conn` (carrier 0 of `session` from leader `who`) the start of a new session
  // under every shard's lock; returns why not (a resume point moved since `told`), empty
  // when it did (then `conn` was moved into carriers_). Caller holds carriers_mu_.
  std::string begin_session(std::unique_ptr<Carrier>& conn, const FollowerHello& told,
                            uint32_t session, const std::string& who) noexcept;
  // Sends an acknowledgement when there is something to acknowledge; 1 when it did.
  size_t send_ack(Shard& s) noexcept;

  // Checkpoint shipping (follower_ship.cc). Stores one chunk; false (and `why`; `protocol`
  // says whether the leader broke the protocol) when the connection must be dropped.
  bool handle_chunk(Shard& s, uint32_t byte_len, std::string& why, bool& protocol) noexcept;
  // The first chunk of checkpoint `id` of `total` bytes arrived: makes room for it. False
  // when there is no memory for it (the leader is answered ShipReply::failed).
  bool start_checkpoint(Shard& s, uint64_t id, uint64_t total) noexcept;
  // Answers a chunk with `reply`; false (and `why`) when that failed.
  bool reply_to_chunk(Shard& s, ShipReply reply, std::string& why, bool& protocol) noexcept;
  bool send_ship_reply(Shard& s, ShipReply reply) noexcept;
  // Accept thread: installs the checkpoints whose last chunk arrived, then replies.
  void install_shipped() noexcept;
  Status install_payload(uint32_t shard, std::span<const uint8_t> payload);
  // Runs `fn` with every shard locked.
  void lock_all(const std::function<void()>& fn);
  std::atomic<bool> ship_ready_{false};

  // Write-ahead log (follower_wal.cc; no-ops without ChannelOptions::wal_dir).
  Status open_wal();
  void start_wal();
  // Logs a verified batch before it is applied; false when the log failed.
  bool wal_append(Shard& s, const BatchView& v, std::span<const std::byte> bytes) noexcept;
  // The seq this shard may acknowledge now.
  uint64_t wal_ack_seq(Shard& s) noexcept;
  // The highest leader epoch accepted before a restart, from the log directory's leader
  // epoch file (leader_epoch_file.h); at create().
  Status load_leader_epoch();
  // Makes leader `node` with `epoch` (accepted next) the highest one on disk before its
  // session starts; false (logged, naming `who`) when the file could not be written.
  bool persist_leader_epoch(const std::string& node, uint64_t epoch,
                            const std::string& who) noexcept;

 public:
  [[nodiscard]] Wal* wal() const noexcept { return wal_.get(); }

 private:
  void* store_;
  ApplyBatchFn apply_batch_;
  StoreHooks hooks_;
  std::unique_ptr<Wal> wal_;
  std::vector<std::unique_ptr<Shard>> shards_;
  // The connections of the current session (docs/replication.md, "Carriers"): any of them
  // carries any shard. carriers_mu_ is taken before a shard lock, never after one.
  std::mutex carriers_mu_;
  std::vector<std::unique_ptr<Carrier>> carriers_;
  // Bytes of the tag after every write of the leader (0 without a pre-shared key).
  uint32_t tag_bytes_ = 0;
  uint32_t session_ = 0;
  bool in_session_ = false;
  std::string session_leader_;  // node id (identity) of the session's leader
  uint64_t session_epoch_ = 0;
  // The highest leader epoch this follower accepted, and from whom (for messages).
  uint64_t highest_epoch_ = 0;
  std::string highest_leader_;
  AcceptedLeader stored_leader_;  // what the leader epoch file holds (with a log)
  // Serialises install() and install_shipped() across the handshake threads.
  std::mutex install_mu_;
  // Set by a checkpoint install: the session ends once the reply to it was posted, and no
  // batch of it is applied before then.
  std::atomic<bool> end_session_{false};
  std::unique_ptr<transport::Listener> listener_;
  transport::Endpoint endpoint_;
  std::atomic<bool> closed_{false};
};

}  // namespace rdmarepl::replication::detail
