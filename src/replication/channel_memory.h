// The registered memory of one channel: slab pools registered once at create() and never
// again. The local pool's arena only the local NIC writes (leader: retained windows,
// catch-up staging buffers, write tags, zero padding; follower: acknowledgement tags); the
// remote pools' arenas the peer writes too (leader: ack targets and acknowledgement-tag
// slots; follower: receive rings and large-record buffers, one pool per buffer generation,
// so that the NIC confines a connection's writes to its generation). Each pool is one
// arena, sized by a MemoryPlan that lists every buffer the engine takes, so that the
// registrations are a handful per channel (plus the zero-copy pool's) whatever the shard
// and follower counts. A buffer of up to memory::kMaxClassSize is a size-class chunk; a
// larger one is a run of contiguous largest-class chunks (memory::LargeBuffer). See
// docs/replication.md, "Memory".
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

#include "hello.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/transport/transport.h"
#include "registered_buffer.h"

namespace rdmarepl::replication::detail {

// What one engine takes from each pool over its life, and the pool sizes that hold it.
class MemoryPlan {
 public:
  // `count` buffers of `bytes` each, with `access` (remote_write selects a remote pool:
  // that of generation `gen`).
  void add(transport::Access access, size_t bytes, size_t count = 1, uint32_t gen = 0) noexcept;
  // The arena that holds pool `pool`'s buffers (0: nothing planned, no pool; pool_of() names
  // the pools). Size-class chunks
  // are counted at their class size, plus what two threads' caches may hold of each class
  // used (a chunk freed by another thread than the one that took it waits in that thread's
  // cache), plus the page alignment of each run and each carved batch.
  [[nodiscard]] size_t pool_bytes(size_t pool) const noexcept;

 private:
  struct Side {
    size_t run_bytes = 0;  // buffers above kMaxClassSize, rounded up to whole chunks
    size_t runs = 0;
    std::array<size_t, memory::kNumClasses> chunks{};  // buffers per size class
  };
  std::array<Side, 1 + kBufferGenerations> sides_{};
};

// The pool of buffers with `access` (and, remotely writable, of generation `gen`): 0 for
// local access, 1 + gen for remote write.
constexpr size_t pool_of(transport::Access access, uint32_t gen = 0) noexcept {
  return transport::has(access, transport::Access::remote_write) ? 1 + gen : 0;
}

// Every buffer of the leader and of the follower, as the engines take them (leader.cc,
// leader_wal.cc, leader_sessions.cc, leader_zero_copy.cc; follower.cc).
MemoryPlan leader_memory_plan(const ChannelOptions& options);
MemoryPlan follower_memory_plan(const ChannelOptions& options);

class ChannelMemory {
 public:
  // Control plane: maps and registers one arena per pool of `plan` through `transport`
  // (which must outlive this), counting the registrations in `counters` (ditto).
  static Result<ChannelMemory> create(transport::Transport& transport, const MemoryPlan& plan,
                                      memory::Counters* counters);

  // Control plane: `bytes` of registered memory with `access` (which picks the pool), never
  // a registration. Zeroed up to kMaxClassSize; a larger buffer's bytes are unspecified. The error
  // names `what` and says which option makes it fit.
  Result<RegisteredBuffer> take(size_t bytes, transport::Access access, std::string_view what,
                                uint32_t gen = 0);

  // The pools' arenas (registrations made).
  [[nodiscard]] size_t arena_count() const;

 private:
  // [0] local access only, [1 + gen] remote write too (pool_of()).
  std::array<std::unique_ptr<memory::SlabPool>, 1 + kBufferGenerations> pools_;
};

}  // namespace rdmarepl::replication::detail
