// ReplicationChannel<Store>: what a key-value store holds to replicate its writes.
//
//   Leader:   auto ch = ReplicationChannel<MyStore>::create(opts, store);
//             auto w = (*ch)->replicate("k", "v");        // encoded once, batched, sent
//             auto st = (*ch)->wait(w.ticket, 100ms);     // committed under opts.ack_mode
//   Follower: the channel calls store.apply(record) for every record, in seq order per
//             shard, exactly once (duplicates after a reconnect are skipped by seq).
//
// Threading: replicate()/erase() may be called from any number of threads; a key maps to
// one shard (hash of the key) and each shard has its own lock, batch and connections, so
// writers of different shards do not contend and a key's writes keep their order.
// progress() may be called from any thread; with PollingMode other than manual a background
// thread calls it. On a follower Store::apply is called from whichever thread runs
// progress(), one shard at a time per call; with one poller thread it is never concurrent.
// See docs/replication.md.
#pragma once

#include <chrono>
#include <concepts>
#include <future>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/detail/apply_records.h"
#include "rdmarepl/replication/detail/channel_core.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/store.h"
#include "rdmarepl/replication/ticket.h"

namespace rdmarepl::replication {

template <class S>
class ReplicationChannel {
  static_assert(Store<S>,
                "rdmarepl::ReplicationChannel<S>: S does not model rdmarepl::Store. A store must "
                "provide `void apply(const rdmarepl::Record&)` (called on followers for each "
                "replicated put/erase); see include/rdmarepl/replication/store.h");

 public:
  // Control plane: validates the options, picks the transport (options.transport), registers
  // the rings / retained window and starts connecting (leader) or listening (follower).
  // `store` must outlive the channel.
  static Result<std::unique_ptr<ReplicationChannel>> create(const ChannelOptions& options,
                                                            S& store) {
    return create(options, store, nullptr);
  }
  // As above over a given transport (e.g. a fault-injecting decorator in tests).
  static Result<std::unique_ptr<ReplicationChannel>> create(
      const ChannelOptions& options, S& store, std::unique_ptr<transport::Transport> transport) {
    StoreHooks hooks;
    hooks.store = &store;
    hooks.apply_batch = &apply_batch_thunk;
    if constexpr (SnapshottableStore<S>) {
      hooks.snapshot = &snapshot_thunk;
      hooks.restore = &restore_thunk;
    }
    if constexpr (DurableStore<S>) hooks.durable_seq = &durable_seq_thunk;
    auto core = ChannelCore::create(options, std::move(transport), hooks);
    if (!core.ok()) return std::move(core).error();
    return std::unique_ptr<ReplicationChannel>(new ReplicationChannel(std::move(core).value()));
  }

  ReplicationChannel(const ReplicationChannel&) = delete;
  ReplicationChannel& operator=(const ReplicationChannel&) = delete;
  ~ReplicationChannel() { core_->close(); }

  // Leader data path: no throw, no allocation. Returns the write's ticket; the record is
  // in a batch that is sent when full, after flush_delay, or on flush().
  WriteResult replicate(std::string_view key, std::string_view value) noexcept {
    return core_->write(Op::put, key, value);
  }
  WriteResult erase(std::string_view key) noexcept { return core_->write(Op::erase, key, {}); }

  // A write group (leader): the puts and erases of `ops`, in order, replicated atomically.
  // They get consecutive seqs in one shard and travel in one batch (never split across
  // batches, so across WAL frames, catch-up or checkpoints); a follower whose store models
  // GroupStore applies them in one apply_group() call, all or nothing, and a store without it
  // gets them one by one through apply() (store.h says what atomicity that has). The ticket
  // is the last record's: wait(), committed() and on_commit() work as for one write.
  // Restriction: every key must map to the same shard (shard_of()); otherwise nothing is
  // replicated and the status is WriteStatus::group_spans_shards. With one shard
  // (ChannelOptions::shards = 1) any keys form a group. The records (record_size() each: 28
  // bytes + key + value) must total at most group_limit_bytes() (WriteStatus::
  // bad_group_size; also for an empty group); a key or value over the single-write limits is
  // WriteStatus::too_large. Per-key order with single writes holds as for any two writes of
  // one shard. Data path: no throw, no allocation.
  WriteResult replicate_group(std::span<const GroupOp> ops) noexcept {
    return core_->write_group(ops);
  }
  // The shard `key` maps to (fixed for the channel's life; the same on every node).
  [[nodiscard]] uint32_t shard_of(std::string_view key) const noexcept {
    return core_->key_shard(key);
  }
  // The most record bytes replicate_group() accepts: a quarter of ring_bytes less a batch
  // header and padding.
  [[nodiscard]] size_t group_limit_bytes() const noexcept { return core_->group_limit_bytes(); }

  // Zero-copy values (leader). allocate() hands out a registered buffer of `size` bytes
  // from the channel's slab pool (ChannelOptions::zero_copy_pool_bytes, registered once at
  // create()); fill it and pass it to replicate(key, std::move(buffer)): the value is sent
  // and logged straight from it, never copied, and the buffer goes back to the pool once
  // every follower acknowledged the batch and it left the retained window. allocate()
  // returns an empty Buffer on a follower, without a pool, when the pool is exhausted or for
  // a size over 1 MiB: then copy the value with replicate(key, string_view). Buffers must
  // come from this channel and be gone before the channel is destroyed. Data path: no throw,
  // no allocation, no registration.
  [[nodiscard]] memory::Buffer allocate(size_t size) noexcept { return core_->allocate(size); }
  WriteResult replicate(std::string_view key, memory::Buffer&& value) noexcept {
    return core_->write_buffer(key, std::move(value));
  }
  // The zero-copy pool's counters. `registrations` counts every registration of the channel
  // (the pool's arenas and the arenas its windows and buffers come from;
  // MetricsSnapshot::memory_registrations): all are made by create(), and it never grows
  // after. The store's regions
  // (register_region() below) are counted apart, in MetricsSnapshot::region_registrations.
  [[nodiscard]] memory::MemoryStats memory_stats() const { return core_->memory_stats(); }
  // Zero-copy batches whose Buffers (or store-region values) are still held (not yet
  // acknowledged by every follower and evicted); 0 once everything was acknowledged and
  // progress() ran.
  [[nodiscard]] size_t zero_copy_retained() const { return core_->zero_copy_retained(); }

  // The store's own memory (leader, control plane). register_region() registers
  // [addr, addr + length) (e.g. the store's mmap'd append-only arena of values) for local
  // access only (never remotely accessible). From then on, a replicate(key, value) whose
  // value (of at least 4 KiB) lies wholly inside a registered region is sent and logged by
  // gather from where it lies, never copied; any other value is copied as before. Errors:
  // the address or length not a multiple of 4 KiB (Errc::misaligned), a range not mapped
  // (Errc::not_mapped), an overlap with a registered region, more than 64 regions; each
  // message says what to do.
  //
  // Lifetime contract: the bytes of a value passed to replicate() must stay unchanged, and
  // mapped, until its batch leaves the retained window (every follower acknowledged it and
  // the log has it; a follower that reconnects before then is resent those bytes). While a
  // retained batch references a region, region_references(addr) > 0. unregister_region()
  // stops gathering from the region at once, then waits (driving progress()) up to
  // `timeout` until no retained batch references it and deregisters it: after ok, the
  // store may unmap or reuse the memory. Errc::timeout otherwise (the region stays
  // retiring: call it again); Errc::not_found when no region starts at `addr`.
  //
  // A region from which no value was replicated for ChannelOptions::region_idle_timeout
  // loses its registration but stays registered as far as the store is concerned: the
  // next value from it is copied, and the channel's control thread registers it again
  // (MetricsSnapshot::region_cache_misses / region_cache_hits; Observation::
  // reg_cache_hit_rate). Registration never happens on the data path.
  Status register_region(const void* addr, size_t length) {
    return core_->register_region(addr, length);
  }
  Status unregister_region(const void* addr,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return core_->unregister_region(addr, timeout);
  }
  // Retained batches whose value lies in the region registered at `addr`.
  [[nodiscard]] size_t region_references(const void* addr) const {
    return core_->region_references(addr);
  }
  // Seals every open batch now (they are sent as credits allow).
  void flush() noexcept { core_->flush(); }

  // True once `ticket` meets the ack mode.
  [[nodiscard]] bool committed(Ticket ticket) const noexcept { return core_->committed(ticket); }
  // Waits until `ticket` meets the ack mode. Errc::timeout when it did not in time (or,
  // with AwayPolicy::fail, when a needed follower has been away for away_timeout): the
  // message names the followers that are missing and how far behind they are.
  Status wait(Ticket ticket, std::chrono::milliseconds timeout) {
    return core_->wait(ticket, timeout);
  }
  // Runs `fn(ctx, ticket, status)` once when `ticket` meets the ack mode (status ok) or can no
  // longer meet it (status holds why: the channel closed, or AwayPolicy::fail gave up). Runs
  // at once on the caller's thread when already committed; otherwise on the thread running
  // progress() (the poller, or the store's own loop with PollingMode::manual), outside the
  // channel's locks, so fn may call replicate(). Never allocates; fails without running fn
  // when max_pending_callbacks callbacks of the shard are pending. fn must not throw.
  Status on_commit(Ticket ticket, CommitFn fn, void* ctx) {
    return core_->on_commit(ticket, fn, ctx);
  }
  // As above with any callable `f(Ticket, const Status&)`, moved to the heap until it runs
  // (one allocation per call; use the function-pointer overload on allocation-free paths).
  template <class F>
  requires std::invocable<F&, Ticket, const Status&> Status on_commit(Ticket ticket, F f) {
    auto box = std::make_unique<F>(std::move(f));
    Status st = core_->on_commit(ticket, &run_boxed<F>, box.get());
    if (st) (void)box.release();  // now owned by the callback, which deletes it when it runs
    return st;
  }
  // A future that becomes ready with the commit's status (as on_commit; one allocation).
  std::future<Status> commit_future(Ticket ticket) {
    auto promise = std::make_shared<std::promise<Status>>();
    std::future<Status> future = promise->get_future();
    Status st = on_commit(ticket, [promise](Ticket, const Status& s) { promise->set_value(s); });
    if (!st) promise->set_value(std::move(st));
    return future;
  }

  // Leader: waits until every follower acknowledged every write so far (whatever the ack
  // mode); useful before shutdown and in tests.
  Status wait_all_acked(std::chrono::milliseconds timeout) {
    return core_->wait_all_acked(timeout);
  }

  // Polls completions, applies/acks (follower), sends batches as credits allow, seals aged
  // batches (leader). Returns the amount of work done (0: idle). Thread-safe.
  size_t progress() noexcept { return core_->progress(); }
  // Stops the poller and closes every connection. Idempotent; the destructor calls it.
  void close() noexcept { core_->close(); }

  [[nodiscard]] MetricsSnapshot metrics() const noexcept { return core_->metrics(); }

  // Live knobs, control plane (never call it from the data path: it may start or join
  // poller threads). The leader applies batch_bytes and flush_delay_us to the open batch of
  // each shard from its next record on, poll_mode / poll_interval_us to its poller threads
  // (the same PollingMode as ChannelOptions::polling), `shards` as the number of
  // poller threads that carry the fixed set of ChannelOptions::shards shards, and
  // pool_bytes as the part of the retained windows (registered at create()) the leader uses.
  // Each value is first limited to what the channel can do (see knobs()); the key -> shard
  // mapping never changes. A follower applies poll_mode / poll_interval_us only. Every
  // change is counted (MetricsSnapshot::knob_changes) and logged at debug level.
  Status apply_knobs(const tuning::Knobs& knobs) { return core_->apply_knobs(knobs); }
  // The knobs in force (after the channel's own limits).
  [[nodiscard]] tuning::Knobs knobs() const { return core_->knobs(); }
  // The Observation (the numbers a tuner sees) of the window since the previous call (the
  // first call starts a window and returns zeros). Independent of the channel's own tuner,
  // which keeps its own window. Control plane.
  [[nodiscard]] tuning::Observation observe() { return core_->observe(); }
  // The tuner's counters when ChannelOptions::tuning.enabled, else nullopt.
  [[nodiscard]] std::optional<tuning::RunnerStats> tuner_stats() const {
    return core_->tuner_stats();
  }
  // Follower: the endpoint it listens on (the port chosen when options.listen.port was 0).
  [[nodiscard]] transport::Endpoint local_endpoint() const { return core_->local_endpoint(); }
  // Leader: the last seq assigned in `shard`. Follower: the last seq applied in `shard`.
  [[nodiscard]] uint64_t last_seq(uint32_t shard) const noexcept { return core_->last_seq(shard); }
  [[nodiscard]] uint64_t applied_seq(uint32_t shard) const noexcept {
    return core_->applied_seq(shard);
  }
  [[nodiscard]] std::string_view transport_name() const noexcept { return core_->transport_name(); }
  [[nodiscard]] const ChannelOptions& options() const noexcept { return core_->options(); }

 private:
  explicit ReplicationChannel(std::unique_ptr<ChannelCore> core) noexcept
      : core_(std::move(core)) {}
  static uint64_t apply_batch_thunk(void* store, const BatchView& batch, uint64_t after,
                                    uint64_t& skipped) {
    return detail::apply_records(*static_cast<S*>(store), batch, after, skipped);
  }
  template <class F>
  static void run_boxed(void* ctx, Ticket ticket, const Status& status) noexcept {
    std::unique_ptr<F> f(static_cast<F*>(ctx));
    (*f)(ticket, status);
  }
  static Status snapshot_thunk(void* store, SnapshotWriter& out) {
    if constexpr (SnapshottableStore<S>) return static_cast<S*>(store)->snapshot(out);
    return ok_status();
  }
  static Status restore_thunk(void* store, SnapshotReader& in) {
    if constexpr (SnapshottableStore<S>) return static_cast<S*>(store)->restore(in);
    return ok_status();
  }
  static uint64_t durable_seq_thunk(void* store, uint32_t shard) {
    if constexpr (DurableStore<S>)
      return static_cast<uint64_t>(static_cast<S*>(store)->durable_seq(shard));
    return 0;
  }

  std::unique_ptr<ChannelCore> core_;
};

}  // namespace rdmarepl::replication
