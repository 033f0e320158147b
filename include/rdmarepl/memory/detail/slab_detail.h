// Internals of SlabPool shared between its inline fast path and src/memory/slab_pool.cc.
// Not part of the API.
#pragma once

#include <array>
#include <atomic>
#include <boost/intrusive/slist.hpp>
#include <cstdint>
#include <mutex>
#include <new>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/config.h"
#include "rdmarepl/memory/arena.h"
#include "rdmarepl/memory/size_classes.h"

// Under AddressSanitizer the bytes of a free chunk past its header are poisoned, so that a
// use of a Buffer's memory after it was released is reported.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define RDMAREPL_MEMORY_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define RDMAREPL_MEMORY_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RDMAREPL_MEMORY_POISON(p, n) ((void)(p), (void)(n))
#define RDMAREPL_MEMORY_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace rdmarepl::memory::detail {

namespace bi = boost::intrusive;

struct ArenaState;
struct ThreadStateAccess;  // defined in src/memory/slab_pool.cc

// Header written into a chunk while it is free. normal_link: the hook is not cleared on
// unlink (the bytes are handed to the user right after), which keeps pop/push to two stores.
// `arena` sits one word away from the hook on purpose: adjacent, the compiler merges the
// two stores of a push into one 16-byte vector store, and the next pop's 8-byte loads from
// it cannot be store-forwarded on some cores (measured: 2-3x slower alloc/free pairs).
struct FreeChunk : bi::slist_base_hook<bi::link_mode<bi::normal_link>> {
  explicit FreeChunk(ArenaState* a) noexcept : arena(a) {}
  void* unused_ = nullptr;
  ArenaState* arena;
};
static_assert(sizeof(FreeChunk) <= kMinClassSize);
static_assert(sizeof(FreeChunk) % 8 == 0, "poisoning works in 8-byte granules");

// Writes the free-chunk header at `p` and poisons the rest of the chunk (sanitizer builds).
inline FreeChunk* make_free_chunk(std::byte* p, ArenaState* arena, size_t chunk_size) noexcept {
  auto* chunk = new (p) FreeChunk(arena);
  RDMAREPL_MEMORY_POISON(p + sizeof(FreeChunk), chunk_size - sizeof(FreeChunk));
  return chunk;
}

// A null-terminated list without a size field or tail pointer: push/pop touch one word.
using FreeList =
    bi::slist<FreeChunk, bi::constant_time_size<false>, bi::linear<true>, bi::cache_last<false>>;

// One arena plus the bookkeeping that decides when it may be re-carved.
struct ArenaState {
  Arena arena;
  transport::MemoryKeys keys;
  // Chunks of this arena that are not in the shared per-class lists: live buffers plus
  // chunks parked in thread caches (a LargeBuffer counts its chunks). Changed only under some
  // class mutex; zero means every chunk ever carved is back in the shared lists, so the
  // arena may be re-carved.
  std::atomic<uint64_t> out{0};
  // Bump pointer for carving new chunks; guarded by the ArenaSet's mutex.
  size_t carved = 0;
};

// A thread's private stock of free chunks for one pool. Only the owning thread touches the
// lists; `allocations` is written by the owner alone (load + store, no locked instruction)
// and read by stats() from any thread.
struct alignas(kCacheLine) ThreadCache {
  struct Class {
    FreeList list;
    uint32_t count = 0;
    uint32_t capacity = 0;
    std::atomic<uint64_t> allocations{0};
  };
  ThreadCache() noexcept {
    for (unsigned c = 0; c < kNumClasses; ++c) classes[c].capacity = thread_cache_capacity(c);
  }
  std::array<Class, kNumClasses> classes;
  bool attached = false;  // a live thread uses it (guarded by the CacheSet's mutex)
};

// The shared stock of one class. The only lock on the allocation path, taken once per
// refill or drain of a thread cache (a batch of chunks), never per allocation.
struct alignas(kCacheLine) SharedClass {
  std::mutex mu;
  FreeList list;
  size_t count = 0;
};

// Per-thread direct-mapped memo: pool id -> that thread's cache. Pool ids are never reused,
// so a slot naming a destroyed pool never matches again. initial-exec TLS keeps the lookup
// to one %fs-relative load even inside the shared library.
struct TlsSlot {
  uint64_t pool_id;
  ThreadCache* cache;
};
inline constexpr size_t kTlsSlots = 8;
extern constinit thread_local std::array<TlsSlot, kTlsSlots> tls_slots
    __attribute__((tls_model("initial-exec")));

}  // namespace rdmarepl::memory::detail
