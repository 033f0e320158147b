// The QP manager: one connection (one RC QP) per shard / worker thread, created lazily on
// first use and pooled when a shard is retired, so that the tuner can move the shard count
// up and down without paying connection set-up each time. When the connections are verbs
// connections, their CQs are resized (ibv_resize_cq) as shards come and go: a fixed budget
// of completion entries is spread over the active shards, never below a connection's own
// queue depth (a CQ smaller than the work it may hold would overflow).
//
// Not thread-safe: the replication layer calls it from its control thread; each worker
// then uses only its own shard's Connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport::verbs {

struct QpManagerOptions {
  size_t max_idle = 4;     // retired connections kept for reuse; more are closed
  uint32_t cq_budget = 0;  // completion entries spread over active shards; 0: no resizing
};

class QpManager {
 public:
  // Makes the connection for a shard (e.g. Transport::connect with the shard in app_data).
  using Factory = std::function<Result<std::unique_ptr<Connection>>(size_t shard)>;

  QpManager(Factory factory, QpManagerOptions options = {})
      : factory_(std::move(factory)), options_(options) {}

  // The shard's connection, connecting (or taking a pooled one) on first use. A pooled
  // connection that failed meanwhile is dropped and replaced.
  Result<Connection*> shard(size_t index);
  // Sets the number of active shards: shards >= n are retired to the idle pool (the pool
  // keeps at most max_idle, closing the rest); CQs are re-sized for the new count.
  Status set_shard_count(size_t n);

  [[nodiscard]] size_t shard_count() const noexcept { return active_.size(); }
  [[nodiscard]] size_t connected() const noexcept;  // active shards with a connection
  [[nodiscard]] size_t idle() const noexcept { return idle_.size(); }
  [[nodiscard]] size_t connections_made() const noexcept { return made_; }
  // The CQ size each active verbs connection was last given (0 before any resize).
  [[nodiscard]] uint32_t cq_entries() const noexcept { return cq_entries_; }

 private:
  Status resize_cqs();

  Factory factory_;
  QpManagerOptions options_;
  std::vector<std::unique_ptr<Connection>> active_;  // index = shard; null until first use
  std::vector<std::unique_ptr<Connection>> idle_;
  size_t made_ = 0;
  uint32_t cq_entries_ = 0;
};

}  // namespace rdmarepl::transport::verbs
