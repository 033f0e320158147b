// ReplicaNode<Store>: one member of a replica group that elects its leader through a
// Coordinator (etcd by default). The winner serves as leader (a ReplicationChannel that
// connects to the other members); the others follow the leader the coordinator names, and
// only that one. docs/failover.md has the guarantees, the hooks and the runbook.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <system_error>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/failover/detail/node_control.h"
#include "rdmarepl/failover/node_options.h"
#include "rdmarepl/replication/channel.h"

namespace rdmarepl::failover {

// What failover needs of a store beyond apply(): `clear()` empties it, so that a member
// whose records diverged from the new leader's (a deposed leader's unacknowledged writes)
// is rebuilt from its log or resynced from the leader.
template <class S>
concept FailoverStore = replication::Store<S> && requires(S& s) {
  {s.clear()};
};

// A write accepted by the leader of `epoch`.
struct NodeTicket {
  replication::Ticket ticket;
  uint64_t epoch = 0;
};

namespace detail {

// The store as the node's channels see it: forwards every hook and keeps, per shard, the
// last seq the store holds (the channel resumes there: DurableStore).
template <class S>
class TrackedStore {
 public:
  explicit TrackedStore(S& s) : s_(s) {
    if constexpr (replication::DurableStore<S>) last_.store(s.durable_seq(0));
  }
  void apply(const replication::Record& r) {
    s_.apply(r);
    last_.store(r.seq, std::memory_order_release);
  }
  void apply_group(const replication::RecordGroup& g) requires replication::GroupStore<S> {
    s_.apply_group(g);
    if (g.size() != 0) last_.store(g.last_seq(), std::memory_order_release);
  }
  Status snapshot(replication::SnapshotWriter& w) requires replication::SnapshottableStore<S> {
    return s_.snapshot(w);
  }
  Status restore(replication::SnapshotReader& r) requires replication::SnapshottableStore<S> {
    auto st = s_.restore(r);
    if (st && !r.seqs().empty()) last_.store(r.seqs()[0], std::memory_order_release);
    return st;
  }
  // A leader's own write: the store takes it, the position is the channel's.
  void apply_local(replication::Op op, std::string_view key, std::string_view value) {
    replication::Record r;
    r.op = op;
    r.key = key;
    r.value = value;
    s_.apply(r);
  }
  uint64_t durable_seq(uint32_t) const noexcept { return last_.load(std::memory_order_acquire); }
  void clear() {
    s_.clear();
    last_.store(0, std::memory_order_release);
  }

 private:
  S& s_;
  std::atomic<uint64_t> last_{0};
};

}  // namespace detail

template <class S>
class ReplicaNode final : private detail::NodeHost {
  static_assert(FailoverStore<S>,
                "rdmarepl::ReplicaNode<S>: S does not model rdmarepl::failover::FailoverStore. "
                "Besides `void apply(const rdmarepl::Record&)` a member's store must provide "
                "`void clear()` (empty it): a member whose records diverged from the new "
                "leader's is rebuilt from its log; see docs/failover.md, \"What the store "
                "implements\"");
  using Channel = replication::ReplicationChannel<detail::TrackedStore<S>>;
  static constexpr std::chrono::milliseconds kWaitSlice{20};

 public:
  using RoleFn = detail::NodeControl::RoleFn;

  // Control plane: validates, recovers the store from dir/wal and starts campaigning.
  // `on_role_change(role, epoch, leader)` runs on the node's control thread at every role
  // change. `store` must be empty (or a DurableStore at its position) and outlive the node.
  static Result<std::unique_ptr<ReplicaNode>> create(const NodeOptions& options, S& store,
                                                     RoleFn on_role_change = {}) {
    std::unique_ptr<ReplicaNode> n(new ReplicaNode(options, store));
    std::error_code ec;
    std::filesystem::create_directories(options.dir, ec);
    if (ec)
      return Error(Errc::io_error,
                   "cannot create NodeOptions::dir " + options.dir + ": " + ec.message());
    auto c = detail::NodeControl::create(
        options, *n, [cb = std::move(on_role_change)](NodeRole r, uint64_t e, const LeaderInfo& l) {
          if (cb) cb(r, e, l);
        });
    if (!c) return std::move(c).error();
    n->control_ = std::move(*c);
    if (auto st = n->control_->start(); !st) return std::move(st).error();
    return n;
  }
  ~ReplicaNode() override { stop(false); }
  ReplicaNode(const ReplicaNode&) = delete;
  ReplicaNode& operator=(const ReplicaNode&) = delete;

  // Leader: replicates the write and applies it to the store (Store::apply, once the channel
  // took it; a refused write touches nothing), both under the node's leadership: a step-down, which
  // rebuilds the store from the log, cannot come between the two. The way to write on a node. On a
  // node that does not lead: Errc::not_leader, naming the leader to redirect to; the store is not
  // touched.
  Result<NodeTicket> put(std::string_view key, std::string_view value) {
    return write([&](Channel& c) {
      auto w = c.replicate(key, value);
      if (w.ok()) tracked_.apply_local(replication::Op::put, key, value);
      return w;
    });
  }
  Result<NodeTicket> remove(std::string_view key) {
    return write([&](Channel& c) {
      auto w = c.erase(key);
      if (w.ok()) tracked_.apply_local(replication::Op::erase, key, {});
      return w;
    });
  }
  // Leader: replicates a write the store already applied (as ReplicationChannel::replicate).
  // The caller must then make sure its store write and this call see the same leadership
  // (a store write on a node that stepped down in between survives the rebuild from the log
  // only in the store); put() and remove() do that. On a node that does not lead:
  // Errc::not_leader, naming the leader to redirect to.
  Result<NodeTicket> replicate(std::string_view key, std::string_view value) {
    return write([&](Channel& c) { return c.replicate(key, value); });
  }
  Result<NodeTicket> erase(std::string_view key) {
    return write([&](Channel& c) { return c.erase(key); });
  }
  void flush() {
    std::shared_lock g(mu_);
    if (channel_ && leading_) channel_->flush();
  }
  // Waits until the write is committed under the ack mode. Fails when the leadership that
  // accepted it ended, or its lease can no longer be trusted: a write is acknowledged only
  // while its leader certainly leads. Waits in slices of at most 20 ms, so that a leader
  // whose lease ran out while it waited (a stalled process) answers at once, and a
  // step-down is never held up by a waiter.
  Status wait(const NodeTicket& t, std::chrono::milliseconds timeout) {
    const Deadline deadline = Deadline::after(timeout);
    for (;;) {
      if (!control_->may_acknowledge(t.epoch)) return lost(t);
      Status st = ok_status();
      {
        std::shared_lock g(mu_);
        if (!channel_ || !leading_ || epoch_ != t.epoch) return lost(t);
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining());
        st = channel_->wait(t.ticket, std::clamp(left, std::chrono::milliseconds(0), kWaitSlice));
      }
      if (st) return control_->may_acknowledge(t.epoch) ? ok_status() : Status(lost(t));
      if (!st.error().is(Errc::timeout) || deadline.expired()) return st;
    }
  }

  [[nodiscard]] NodeRole role() const noexcept { return control_->role(); }
  [[nodiscard]] uint64_t epoch() const noexcept { return control_->epoch(); }
  [[nodiscard]] LeaderInfo leader() const { return control_->leader(); }
  // The last seq the store holds (follower: applied; leader: assigned).
  [[nodiscard]] uint64_t last_seq() const noexcept override {
    std::shared_lock g(mu_);
    if (channel_ && leading_) return channel_->last_seq(0);
    return tracked_.durable_seq(0);
  }
  [[nodiscard]] bool leader_connected() const override {
    std::shared_lock g(mu_);
    return channel_ && !leading_ && channel_->metrics().leader_sessions != 0;
  }
  // Stops the node. With `resign` a leader hands its leadership back first, so that another
  // member takes over without waiting for the lease to expire.
  void stop(bool resign) noexcept {
    if (control_) control_->stop(resign);
  }

 private:
  ReplicaNode(const NodeOptions& o, S& s) : o_(o), tracked_(s) {}

  template <class F>
  Result<NodeTicket> write(F&& f) {
    {
      std::shared_lock g(mu_);
      if (channel_ && leading_) {
        auto w = f(*channel_);
        if (w.ok()) return NodeTicket{w.ticket, epoch_};
        if (w.status != replication::WriteStatus::not_leader &&
            w.status != replication::WriteStatus::closed)
          return Error(Errc::busy, std::string("write refused: ") +
                                       std::string(replication::describe(w.status)));
      }
    }
    return control_->not_leader_error();
  }
  Error lost(const NodeTicket& t) const {
    return Error(Errc::not_leader,
                 "the leadership of epoch " + std::to_string(t.epoch) +
                     " that accepted this write ended before it was acknowledged; it may or "
                     "may not survive: read it back from the new leader (" +
                     control_->not_leader_error().message() + ")");
  }

  replication::ChannelOptions channel_options(replication::Role role, uint64_t epoch) const {
    replication::ChannelOptions c = o_.channel;
    c.role = role;
    c.node_id = o_.id;
    c.leader_epoch = epoch;
    c.wal_dir = o_.dir + "/wal";
    c.peers.clear();
    for (const auto& m : o_.members) {
      if (m.id == o_.id)
        c.listen = m.endpoint;
      else
        c.peers.push_back(m.endpoint);
    }
    if (role == replication::Role::leader) c.listen = {};
    return c;
  }
  Status open(replication::Role role, uint64_t epoch) {
    auto ch = Channel::create(channel_options(role, epoch), tracked_);
    if (!ch) return std::move(ch).error();
    std::unique_lock g(mu_);
    channel_ = std::move(*ch);
    leading_ = role == replication::Role::leader;
    epoch_ = epoch;
    return ok_status();
  }
  Status open_leader(uint64_t epoch) override { return open(replication::Role::leader, epoch); }
  Status open_follower(uint64_t epoch) override { return open(replication::Role::follower, epoch); }
  void close_channel() noexcept override {
    std::unique_ptr<Channel> c;
    {
      std::unique_lock g(mu_);
      c = std::move(channel_);
      leading_ = false;
    }
    c.reset();  // closes outside the lock
  }
  Status reset_store(bool keep_log) override {
    tracked_.clear();
    if (keep_log) return ok_status();
    std::error_code ec;
    std::filesystem::remove_all(o_.dir + "/wal", ec);
    if (ec) return Error(Errc::io_error, "cannot remove " + o_.dir + "/wal: " + ec.message());
    return ok_status();
  }

  NodeOptions o_;
  detail::TrackedStore<S> tracked_;
  mutable std::shared_mutex mu_;
  std::unique_ptr<Channel> channel_;
  bool leading_ = false;
  uint64_t epoch_ = 0;
  std::unique_ptr<detail::NodeControl> control_;
};

}  // namespace rdmarepl::failover
