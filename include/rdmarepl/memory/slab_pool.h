// SlabPool: registered arenas carved into size-class chunks, handed out as Buffers.
//
// Data path (alloc, Buffer::reset): a thread takes chunks from, and returns them to, its own
// cache: no lock, no locked instruction, no registration. Only when its cache of a class
// runs dry or overflows does it exchange a batch with the shared per-class list under that
// class's mutex. Registration happens only in create(), on the control plane: the pool never
// grows, and when it is exhausted alloc() returns an empty Buffer and counts a failure.
//
// Buffers above the largest class (alloc_large(), control plane) are runs of contiguous
// largest-class chunks of one arena; they go back as ordinary largest-class chunks. Threads
// return their cache when they exit; a long-lived idle thread can call flush_thread_cache().
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/config.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/arena.h"
#include "rdmarepl/memory/buffer.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/detail/arena_set.h"
#include "rdmarepl/memory/detail/cache_set.h"
#include "rdmarepl/memory/detail/slab_detail.h"
#include "rdmarepl/memory/large_buffer.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/memory/size_classes.h"
#include "rdmarepl/memory/translation_table.h"

namespace rdmarepl::memory {

struct PoolOptions {
  // The data the pool must hold at once (in-flight batches, rings of send buffers...).
  size_t working_set_bytes = size_t{32} << 20;
  // Pre-register this multiple of the working set: 2x, as the source advises, leaves room for
  // size-class rounding (up to 2x for powers of two) without registering on the data path.
  double working_set_factor = 2.0;
  // If non-zero, the initial pool size in bytes (overrides working set x factor).
  size_t pool_bytes = 0;
  // The initial pool is split into arenas of this size (the last may be smaller). An arena
  // whose chunks are all back can be re-carved for another class; each costs one
  // registration. A LargeBuffer lies in one arena, so it is at most this big.
  size_t arena_bytes = size_t{64} << 20;
  ArenaOptions arena{};

  [[nodiscard]] size_t initial_bytes() const noexcept {
    if (pool_bytes != 0) return pool_bytes;
    return static_cast<size_t>(static_cast<double>(working_set_bytes) * working_set_factor);
  }
};

class alignas(kCacheLine) SlabPool {
 public:
  // Maps and registers the initial arenas. `counters` and `table` may be null; if given they
  // must outlive the pool. Every arena is added to `table` while it exists.
  static Result<std::unique_ptr<SlabPool>> create(const PoolOptions& options, Registrar registrar,
                                                  Counters* counters = nullptr,
                                                  TranslationTable* table = nullptr);
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;
  // Every Buffer from this pool must be gone; no thread may be inside alloc().
  ~SlabPool();

  // Data path: a chunk of at least `size` bytes, or an empty Buffer when size exceeds
  // kMaxClassSize or the pool is exhausted (counted in failed_allocations). Never registers.
  [[nodiscard]] inline Buffer alloc(size_t size) noexcept;

  // Control plane: `size` bytes (any size, typically above kMaxClassSize) as a run of
  // contiguous largest-class chunks not yet carved from one arena, or an empty LargeBuffer
  // when no arena has that much left (counted in failed_allocations). Never registers.
  [[nodiscard]] LargeBuffer alloc_large(size_t size) noexcept;
  // Returns the calling thread's cached free chunks to the shared lists.
  void flush_thread_cache() noexcept;

  [[nodiscard]] MemoryStats stats() const;
  [[nodiscard]] size_t arena_count() const { return arenas_.count(); }
  [[nodiscard]] size_t capacity_bytes() const { return arenas_.capacity_bytes(); }
  [[nodiscard]] std::vector<transport::RegisteredRegion> regions() const {
    return arenas_.regions();
  }
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Registrar& registrar() const noexcept { return registrar_; }
  [[nodiscard]] const Counters& counters() const noexcept { return *counters_; }

 private:
  friend class Buffer;
  friend struct detail::ThreadStateAccess;
  SlabPool(const PoolOptions& options, Registrar registrar, Counters* counters,
           TranslationTable* table);

  inline void release(std::byte* p, detail::ArenaState* arena, unsigned cls) noexcept;
  friend class LargeBuffer;
  void release_large(std::byte* p, detail::ArenaState* arena, size_t size) noexcept;
  // The TLS slot memoising this pool's cache. Derived from the object's address (the class
  // is cache-line aligned) rather than loaded from a member, so that finding the cache is
  // not one more dependent load; a slot still belongs to a pool only if it holds its id_.
  size_t slot_index() const noexcept {
    return (reinterpret_cast<uintptr_t>(this) / kCacheLine) % detail::kTlsSlots;
  }
  // A chunk of class `cls` (counted as allocated), or null (counted as failed).
  detail::FreeChunk* alloc_slow(unsigned cls) noexcept;
  void release_slow(std::byte* p, detail::ArenaState* arena, unsigned cls) noexcept;

  detail::ThreadCache* local_cache() noexcept;  // attaches; null while the thread exits
  // A thread that exits returns its cache (ThreadStateAccess).
  void detach_cache(detail::ThreadCache* tc) noexcept;
  size_t refill(detail::ThreadCache& tc, unsigned cls) noexcept;
  void drain(detail::ThreadCache& tc, unsigned cls, uint32_t keep) noexcept;
  // Re-carves an arena whose chunks are all back (every class mutex taken here).
  bool recycle_free_arena() noexcept;
  Buffer make_buffer(detail::FreeChunk& chunk, size_t size, unsigned cls) noexcept {
    detail::ArenaState* a = chunk.arena;
    RDMAREPL_MEMORY_UNPOISON(&chunk, class_size(cls));
    return Buffer(reinterpret_cast<std::byte*>(&chunk), this, a, static_cast<uint32_t>(size),
                  static_cast<uint8_t>(cls));
  }

  const uint64_t id_;
  const PoolOptions options_;
  const Registrar registrar_;
  Counters own_counters_;
  Counters* const counters_;

  // Destroyed last: the lists below hold chunks of its memory (the destructor empties
  // them first). Lock order: detail/arena_set.h.
  detail::ArenaSet arenas_;
  std::array<detail::SharedClass, kNumClasses> shared_;
  detail::CacheSet caches_;
  // Allocations made by threads that are exiting and have no cache any more.
  std::array<std::atomic<uint64_t>, kNumClasses> uncached_allocations_{};
};

// ----------------------------------------------------------------------------- data path

inline Buffer SlabPool::alloc(size_t size) noexcept {
  const unsigned cls = class_of(size);
  const auto& slot = detail::tls_slots[slot_index()];
  detail::FreeChunk* chunk;
  if (RDMAREPL_LIKELY(slot.pool_id == id_ && cls < kNumClasses &&
                      slot.cache->classes[cls].count != 0)) {
    auto& c = slot.cache->classes[cls];
    chunk = &c.list.front();
    c.list.pop_front();
    --c.count;
    c.allocations.store(c.allocations.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  } else {
    // The slow path returns a pointer, not a Buffer, so that the Buffer never escapes and
    // stays in registers on the fast path.
    chunk = alloc_slow(cls);
    if (chunk == nullptr) return Buffer();
  }
  return make_buffer(*chunk, size, cls);
}

inline void SlabPool::release(std::byte* p, detail::ArenaState* arena, unsigned cls) noexcept {
  const auto& slot = detail::tls_slots[slot_index()];
  if (RDMAREPL_LIKELY(slot.pool_id == id_)) {
    auto& c = slot.cache->classes[cls];
    if (RDMAREPL_LIKELY(c.count < c.capacity)) {
      c.list.push_front(*detail::make_free_chunk(p, arena, class_size(cls)));
      ++c.count;
      return;
    }
  }
  release_slow(p, arena, cls);
}

inline transport::MemoryKeys Buffer::keys() const noexcept {
  return arena_ != nullptr ? arena_->keys : transport::MemoryKeys{};
}

inline void Buffer::reset() noexcept {
  if (data_ == nullptr) return;
  pool_->release(data_, arena_, cls_);
  data_ = nullptr;
}

inline transport::MemoryKeys LargeBuffer::keys() const noexcept {
  return arena_ != nullptr ? arena_->keys : transport::MemoryKeys{};
}

inline void LargeBuffer::reset() noexcept {
  if (data_ == nullptr) return;
  pool_->release_large(data_, arena_, size_);
  data_ = nullptr;
}

}  // namespace rdmarepl::memory
