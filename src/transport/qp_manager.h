// The QP manager of one peer: a pool of connections to it ("QPs": an RC QP on verbs, a
// socket on TCP) and the sizing of their completion queues. The layer above keeps the
// connections it uses (the replication leader's carriers, src/replication/leader_carriers.h)
// and:
//   - acquire()s one for a slot when it needs another: a pooled one released from that same
//     slot when there is a healthy one (no connection set-up, counted as reused), else a
//     new one from the factory. A connection stays with the slot it was made for, because
//     the layer above binds per-slot state to it in its handshake (the leader's
//     authentication counters and the reply slots its hello advertised);
//   - release()s one it no longer uses: it stays connected in the pool (at most max_idle;
//     more, or a failed one, are closed), its completion queues shrunk to their floor;
//   - set_active(n)s the number N of connections in use, then fit()s each of them: every
//     active connection's completion queues get cq_budget / N entries, never fewer than the
//     connection's floor (Connection::resize_completions: ibv_resize_cq on verbs, the
//     completion ring on TCP), so that the peer's completion entries stay about cq_budget
//     whatever N is, and a connection that carries the work of more of them holds more.
//
// Not thread-safe: one control thread calls it. fit() runs resize_completions(), which must
// not run concurrently with the connection's data path: the caller holds the lock that
// guards it. Pooled connections belong to the manager alone (for_each_idle() lends them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport {

struct QpManagerOptions {
  size_t max_idle = 4;     // released connections kept for reuse; more are closed
  uint32_t cq_budget = 0;  // completion entries spread over the active connections; 0: none
  // Counted into as well as the manager's own counters when set (e.g. a channel's metrics).
  std::atomic<uint64_t>* reused_counter = nullptr;
  std::atomic<uint64_t>* resize_counter = nullptr;
};

class QpManager {
 public:
  // Makes a new connection for use in slot `slot` of the layer above (e.g. Transport::connect
  // with the slot in app_data).
  using Factory = std::function<Result<std::unique_ptr<Connection>>(uint32_t slot)>;

  QpManager(Factory factory, QpManagerOptions options)
      : factory_(std::move(factory)), options_(options) {}
  ~QpManager() { clear(); }
  QpManager(const QpManager&) = delete;
  QpManager& operator=(const QpManager&) = delete;

  // A connection for `slot`: a healthy one pooled from that slot, else a new one; fitted
  // to the current share of the budget. `*reused` (when given) says which.
  Result<std::unique_ptr<Connection>> acquire(uint32_t slot, bool* reused = nullptr);
  // Takes back the connection of `slot` the caller no longer uses: pooled (shrunk to its
  // floor) while healthy and the pool has room, else closed.
  void release(std::unique_ptr<Connection> conn, uint32_t slot);
  // Sets N, the connections in use; true when each one's share of the budget changed (the
  // caller then fit()s every active connection).
  bool set_active(uint32_t n) noexcept;
  // Resizes an active connection's completion queues to the current share.
  Status fit(Connection& conn);
  // Lends each pooled connection to `f(slot, conn)` (e.g. to poll it, so that a failure is
  // noticed).
  template <class F>
  void for_each_idle(F&& f) {
    for (auto& p : idle_) f(p.slot, *p.conn);
  }
  // Closes every pooled connection (the session they belong to is over).
  void clear() noexcept;

  [[nodiscard]] size_t idle() const noexcept { return idle_.size(); }
  [[nodiscard]] uint32_t active() const noexcept { return active_; }
  // The completion entries an active connection gets now (0: no budget, never resized).
  [[nodiscard]] uint32_t cq_entries() const noexcept { return cq_entries_; }
  [[nodiscard]] uint64_t made() const noexcept { return made_; }
  [[nodiscard]] uint64_t reused() const noexcept { return reused_; }
  [[nodiscard]] uint64_t cq_resizes() const noexcept { return resizes_; }

 private:
  // Resizes `conn` to `entries` (0: its floor) and counts a resize that happened.
  Status resize(Connection& conn, uint32_t entries);

  struct Pooled {
    uint32_t slot;
    std::unique_ptr<Connection> conn;
  };

  Factory factory_;
  QpManagerOptions options_;
  std::vector<Pooled> idle_;
  uint32_t active_ = 0;
  uint32_t cq_entries_ = 0;
  uint64_t made_ = 0;
  uint64_t reused_ = 0;
  uint64_t resizes_ = 0;
};

}  // namespace rdmarepl::transport
