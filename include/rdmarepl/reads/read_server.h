// ReadServer<Store>: serves get(key) from a replica's store to remote ReadClients.
//
//   auto srv = ReadServer<MyStore>::create(opts, store, channel);  // a follower's channel
//   ... (*srv)->local_endpoint() is where clients connect.
//
// One background thread accepts clients and another answers their requests: it calls
// Store::get from that thread, concurrently with the channel's apply() calls, so the
// store's get() must be safe to run while apply() runs (a reader lock, an MVCC store...).
// Replication never waits for reads: the server takes no lock of the channel and reads
// only its applied sequence numbers. Wire format and guarantees: docs/reads.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/reads/options.h"
#include "rdmarepl/replication/channel.h"
#include "rdmarepl/replication/store.h"

namespace rdmarepl::reads {

// What the untyped server core calls back.
struct ReadHooks {
  void* store = nullptr;
  bool (*get)(void* store, std::string_view key, std::string& out) = nullptr;
  void* progress = nullptr;
  // The last seq applied in `shard` (a follower) or assigned (the leader).
  uint64_t (*applied_seq)(void* progress, uint32_t shard) noexcept = nullptr;
  uint32_t shards = 1;  // tickets of other shards are refused as bad requests
};

// Counters of a server (monotonic, read from any thread).
struct ReadServerStats {
  uint64_t connections = 0;  // accepted and still open
  uint64_t requests = 0;     // answered
  uint64_t keys = 0;         // looked up
  uint64_t bad_requests = 0;
  uint64_t behind = 0;  // at_least requests answered "behind"
  // Connections closed before or in their handshake (docs/transport.md, "Handshake
  // admission"): timed out (the peer said nothing, or too little, within connect_timeout),
  // and refused (closed at once by the admission limits or a backing-off address, or whose
  // handshake failed).
  uint64_t handshake_timeouts = 0;
  uint64_t handshakes_refused = 0;
};

class ReadServerCore {
 public:
  static Result<std::unique_ptr<ReadServerCore>> create(const ReadServerOptions& options,
                                                        const ReadHooks& hooks);
  virtual ~ReadServerCore() = default;
  [[nodiscard]] virtual transport::Endpoint local_endpoint() const = 0;
  [[nodiscard]] virtual ReadServerStats stats() const = 0;
  virtual void close() noexcept = 0;
};

template <class S>
class ReadServer {
  static_assert(replication::ReadableStore<S>,
                "rdmarepl::reads::ReadServer<S>: S must provide `bool get(std::string_view key, "
                "std::string& out)` (see include/rdmarepl/replication/store.h)");

 public:
  // `store` and `channel` must outlive the server.
  static Result<std::unique_ptr<ReadServer>> create(const ReadServerOptions& options, S& store,
                                                    replication::ReplicationChannel<S>& channel) {
    ReadHooks hooks;
    hooks.store = &store;
    hooks.get = [](void* s, std::string_view key, std::string& out) {
      return static_cast<bool>(static_cast<S*>(s)->get(key, out));
    };
    hooks.progress = &channel;
    hooks.applied_seq = [](void* c, uint32_t shard) noexcept {
      return static_cast<replication::ReplicationChannel<S>*>(c)->last_seq(shard);
    };
    hooks.shards = channel.options().shards;
    auto core = ReadServerCore::create(options, hooks);
    if (!core.ok()) return std::move(core).error();
    return std::unique_ptr<ReadServer>(new ReadServer(std::move(core).value()));
  }

  [[nodiscard]] transport::Endpoint local_endpoint() const { return core_->local_endpoint(); }
  [[nodiscard]] ReadServerStats stats() const { return core_->stats(); }
  void close() noexcept { core_->close(); }

 private:
  explicit ReadServer(std::unique_ptr<ReadServerCore> core) noexcept : core_(std::move(core)) {}
  std::unique_ptr<ReadServerCore> core_;
};

}  // namespace rdmarepl::reads
