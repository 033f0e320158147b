// The read client's engine (docs/reads.md, "The client: one I/O pass for every caller"):
// the gets of every calling thread wait in one queue, one pass packs them into at most one
// request message per replica connection, and the responses of every connection are
// handed back to their callers. Not thread-safe: ReadClient runs it under its lock, and
// only the thread that holds the poller role calls send_pending(), wait() and reap().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/reads/consistency.h"
#include "rdmarepl/reads/options.h"
#include "read_format.h"
#include "replica_link.h"

namespace rdmarepl::reads {

// ReadOp::signal: the caller waits (still on the CPU), sleeps on the futex, or was woken
// (its get is done or it was handed the poller role).
inline constexpr uint32_t kWaiting = 0;
inline constexpr uint32_t kAsleep = 1;
inline constexpr uint32_t kWoken = 2;

struct AsyncRead;

// One caller's get(): lives on the caller's stack until done (get()), or in the client's
// pool of asynchronous gets (get_async(): `async` is its owner).
struct ReadOp {
  std::span<const std::string_view> keys;
  std::vector<ReadResult>* out = nullptr;
  RequestHeader header;  // kind, shard, min_seq, wait_ms: messages only mix equal ones
  bool leader = false;   // Consistency::leader: sent to the leader's server only
  uint64_t deadline_ns = 0;
  uint32_t unanswered = 0;  // keys without a result yet
  Status status;
  bool done = false;
  // Wakes the waiting caller once done or handed the poller role (kWaiting, kAsleep, kWoken;
  // see ReadClient::Impl::wake()).
  std::atomic<uint32_t> signal{kWaiting};
  AsyncRead* async = nullptr;  // no caller waits: the driving thread runs its callback
};

class ReadEngine {
 public:
  ReadEngine(const ReadClientOptions& options, std::unique_ptr<transport::Transport> transport);
  ~ReadEngine();
  ReadEngine(const ReadEngine&) = delete;
  ReadEngine& operator=(const ReadEngine&) = delete;

  // Connects every endpoint; false (with why) when none could be reached.
  bool open_all(std::string& why);
  [[nodiscard]] bool has_leader() const noexcept { return leaders_at_ < replicas_.size(); }
  [[nodiscard]] size_t live_replicas() const noexcept;

  // Queues op's keys. The op must stay alive until done.
  void enqueue(ReadOp& op);
  // Finishes an op of no keys (its caller is woken, or its callback run, as any other's).
  void answer_now(ReadOp& op) { complete(op, ok_status()); }
  // Whether a get is queued or in flight (someone must keep polling).
  [[nodiscard]] bool busy() const noexcept { return !todo_.empty() || !flying_.empty(); }
  // Packs what is queued into messages (one per sendable replica of each class) and posts
  // them.
  void send_pending();
  // The connections to block on: those with messages outstanding. Empty: nap instead.
  void waiting(std::vector<transport::Connection*>& out);
  // Reaps every connection's responses into their ops; fails over broken links.
  void reap();
  // Fails the ops whose deadline passed.
  void expire(uint64_t now_ns);
  // The caller to hand the poller role to: the newest active op other than `self` whose
  // caller is still on the CPU (not kAsleep), else the newest one (nullptr: none).
  // Asynchronous gets have no caller waiting and are never chosen.
  [[nodiscard]] ReadOp* waiter_other_than(const ReadOp* self) const noexcept;
  // Moves the ops finished since the last call into `out` (which it clears first): their
  // callers are to be woken.
  void take_finished(std::vector<ReadOp*>& out) noexcept;

 private:
  // Keys [first, first + count) of op's keys; op == nullptr once the op gave up.
  struct Piece {
    ReadOp* op = nullptr;
    uint32_t first = 0;
    uint32_t count = 0;
  };
  // A request message on the wire and the pieces it carries, in order.
  struct Flight {
    uint32_t request_id = 0;
    size_t replica = 0;
    std::vector<Piece> pieces;
  };
  struct Replica {
    transport::Endpoint where;
    std::unique_ptr<ReplicaLink> link;
    uint64_t retry_at_ns = 0;
    std::string last_error;
  };

  void try_open(Replica& r);
  void drop(size_t i, const std::string& why);
  // Replicas of a class (leader or not) that can take a message now; reconnects due ones.
  size_t sendable(bool leader, bool& any_live);
  Replica* pick(bool leader);
  // Sends one message of queued pieces of `leader`'s class and of the first queued
  // piece's header, of about `keys_per_message` keys. False when none could be sent.
  bool send_one(bool leader, size_t keys_per_message);
  void send_class(bool leader);
  Status take(size_t replica, std::span<const uint8_t> message);
  Status fill(Flight& f, ResponseReader& reader, const ResponseHeader& h);
  void complete(ReadOp& op, Status st);
  void fail_op(ReadOp& op, Status st);
  void fail_class(bool leader, const std::string& why);
  void compact_todo();
  Flight take_spare();

  ReadClientOptions options_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<Replica> replicas_;  // options.replicas, then the leader (if any)
  size_t leaders_at_ = 0;          // index of the leader in replicas_ (== size: none)
  size_t next_ = 0;                // round-robin position
  uint32_t next_id_ = 1;
  std::vector<Piece> todo_;        // queued, oldest first; count == 0: taken
  std::vector<Flight> flying_;     // messages awaiting their response
  std::vector<Flight> spare_;      // finished flights, kept for their piece buffers
  std::vector<ReadOp*> active_;    // ops not done, oldest first
  std::vector<ReadOp*> finished_;  // done, callers not yet woken
  std::vector<std::string_view> views_;
  std::vector<ReplicaLink::Response> responses_;
};

}  // namespace rdmarepl::reads
