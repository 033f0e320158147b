#include "rdmarepl/memory/slab_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "rdmarepl/core/log.h"

namespace rdmarepl::memory {
namespace detail {

constinit thread_local std::array<TlsSlot, kTlsSlots> tls_slots
    __attribute__((tls_model("initial-exec"))) = {};

namespace {

// Pools alive in the process, so that an exiting thread returns its caches only to pools
// that still exist. Lock order: g_pools_mu before any SlabPool mutex.
std::mutex g_pools_mu;
std::unordered_map<uint64_t, SlabPool*>& live_pools() {
  static auto* pools = new std::unordered_map<uint64_t, SlabPool*>();  // never destroyed:
  return *pools;  // threads may exit after static destruction has begun
}
std::atomic<uint64_t> g_next_pool_id{1};  // 0 marks an empty TLS slot

// Set once the thread's ThreadState is destroyed: from then on the thread has no caches and
// allocates from / frees to the shared lists directly.
constinit thread_local bool t_exiting = false;

}  // namespace

// The calling thread's caches, one per pool it has used.
struct ThreadStateAccess {
  struct State {
    std::vector<std::pair<uint64_t, ThreadCache*>> caches;
    ~State() {
      t_exiting = true;
      tls_slots = {};
      std::lock_guard lock(g_pools_mu);
      for (auto [id, tc] : caches) {
        auto it = live_pools().find(id);
        if (it != live_pools().end()) it->second->detach_cache(tc);
      }
    }
  };
  static State* state() noexcept {
    if (t_exiting) return nullptr;
    thread_local State s;
    return &s;
  }
  // Forgets caches of destroyed pools so that a thread creating many pools stays bounded.
  static void prune(State& s) {
    std::lock_guard lock(g_pools_mu);
    std::erase_if(s.caches, [](const auto& e) { return !live_pools().contains(e.first); });
  }
  static uint64_t register_pool(SlabPool* pool) {
    uint64_t id = g_next_pool_id.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(g_pools_mu);
    live_pools().emplace(id, pool);
    return id;
  }
  static void unregister_pool(uint64_t id) {
    std::lock_guard lock(g_pools_mu);
    live_pools().erase(id);
  }
};

}  // namespace detail

using detail::ArenaState;
using detail::FreeChunk;
using detail::FreeList;
using detail::ThreadCache;

namespace {

// Adds `n` to (or, returning, subtracts from) an arena's `out` count. Runs of chunks from one
// arena are batched into one atomic operation.
class OutTally {
 public:
  explicit OutTally(bool returning) : returning_(returning) {}
  ~OutTally() { flush(); }
  void count(ArenaState* a) {
    if (a != arena_) {
      flush();
      arena_ = a;
    }
    ++n_;
  }
  void flush() {
    if (arena_ == nullptr || n_ == 0) return;
    if (!returning_) {
      arena_->out.fetch_add(n_, std::memory_order_relaxed);
    } else {
      arena_->out.fetch_sub(n_, std::memory_order_relaxed);
    }
    n_ = 0;
  }

 private:
  bool returning_;
  ArenaState* arena_ = nullptr;
  uint64_t n_ = 0;
};

}  // namespace

SlabPool::SlabPool(const PoolOptions& options, Registrar registrar, Counters* counters,
                   TranslationTable* table)
    : id_(detail::ThreadStateAccess::register_pool(this)),
      options_(options),
      registrar_(std::move(registrar)),
      counters_(counters != nullptr ? counters : &own_counters_),
      arenas_(table) {}

Result<std::unique_ptr<SlabPool>> SlabPool::create(const PoolOptions& options, Registrar registrar,
                                                   Counters* counters, TranslationTable* table) {
  if (options.arena_bytes < kMaxClassSize)
    return Error(Errc::invalid_argument,
                 fmt::format("memory: arena_bytes {} is below the largest size class ({} B); "
                             "use at least {} B",
                             options.arena_bytes, kMaxClassSize, kMaxClassSize));
  std::unique_ptr<SlabPool> pool(new SlabPool(options, std::move(registrar), counters, table));
  size_t remaining = options.initial_bytes();
  while (remaining > 0) {
    size_t bytes = std::min(remaining, options.arena_bytes);
    bytes = std::max(bytes, kMaxClassSize);  // every arena can hold the largest class
    RDMAREPL_TRY(pool->arenas_.add(bytes, options.arena, pool->registrar_, pool->counters_));
    remaining -= std::min(remaining, bytes);
  }
  return pool;
}

SlabPool::~SlabPool() {
  detail::ThreadStateAccess::unregister_pool(id_);
  // Empty the lists before the memory holding their nodes is unmapped (O(1) with
  // normal_link hooks: the nodes are not touched); arenas_ unmaps after this body.
  for (auto& sh : shared_) sh.list.clear();
  caches_.clear_lists();
}

LargeBuffer SlabPool::alloc_large(size_t size) noexcept {
  const size_t bytes = large_chunks(std::max<size_t>(size, 1)) * kMaxClassSize;
  // A run is carved like a batch of largest-class chunks: under that class's mutex.
  std::lock_guard class_lock(shared_[kNumClasses - 1].mu);
  auto [p, arena] = arenas_.carve_run(bytes);
  if (p != nullptr) return LargeBuffer(p, this, arena, size);
  counters_->add(counters_->failed_allocations);
  return LargeBuffer();
}

void SlabPool::release_large(std::byte* p, ArenaState* arena, size_t size) noexcept {
  const size_t n = large_chunks(std::max<size_t>(size, 1));
  auto& sh = shared_[kNumClasses - 1];
  std::lock_guard lock(sh.mu);
  for (size_t i = 0; i < n; ++i)
    sh.list.push_front(*detail::make_free_chunk(p + i * kMaxClassSize, arena, kMaxClassSize));
  sh.count += n;
  arena->out.fetch_sub(n, std::memory_order_relaxed);
}

// ----------------------------------------------------------------------------- slow paths

ThreadCache* SlabPool::local_cache() noexcept {
  auto& slot = detail::tls_slots[slot_index()];
  if (slot.pool_id == id_) return slot.cache;
  auto* state = detail::ThreadStateAccess::state();
  if (state == nullptr) return nullptr;
  ThreadCache* tc = nullptr;
  for (auto [id, cache] : state->caches) {
    if (id == id_) tc = cache;
  }
  if (tc == nullptr) {
    try {
      if (state->caches.size() >= 16) detail::ThreadStateAccess::prune(*state);
      tc = caches_.attach();
      state->caches.emplace_back(id_, tc);
    } catch (...) {  // out of memory for the bookkeeping: run without a cache
      return nullptr;
    }
  }
  slot = {id_, tc};
  return tc;
}

void SlabPool::detach_cache(ThreadCache* tc) noexcept {
  for (unsigned c = 0; c < kNumClasses; ++c) drain(*tc, c, 0);
  caches_.detach(tc);
}

FreeChunk* SlabPool::alloc_slow(unsigned cls) noexcept {
  if (cls >= kNumClasses) {
    counters_->add(counters_->failed_allocations);
    return nullptr;
  }
  ThreadCache* tc = local_cache();
  if (tc != nullptr) {
    auto& c = tc->classes[cls];
    if (c.count == 0 && refill(*tc, cls) == 0) {
      counters_->add(counters_->failed_allocations);
      return nullptr;
    }
    FreeChunk& chunk = c.list.front();
    c.list.pop_front();
    --c.count;
    c.allocations.store(c.allocations.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    return &chunk;
  }
  // An exiting thread: take one chunk straight from the shared list.
  FreeList one;
  {
    auto& sh = shared_[cls];
    std::lock_guard lock(sh.mu);
    if (!sh.list.empty()) {
      FreeChunk& chunk = sh.list.front();
      sh.list.pop_front();
      --sh.count;
      chunk.arena->out.fetch_add(1, std::memory_order_relaxed);
      one.push_front(chunk);
    } else {
      arenas_.carve(one, cls, 1);
    }
  }
  if (one.empty()) {
    counters_->add(counters_->failed_allocations);
    return nullptr;
  }
  uncached_allocations_[cls].fetch_add(1, std::memory_order_relaxed);
  FreeChunk& chunk = one.front();
  one.pop_front();
  return &chunk;
}

void SlabPool::release_slow(std::byte* p, ArenaState* arena, unsigned cls) noexcept {
  auto* chunk = detail::make_free_chunk(p, arena, class_size(cls));
  ThreadCache* tc = local_cache();
  if (tc != nullptr) {
    auto& c = tc->classes[cls];
    c.list.push_front(*chunk);
    if (++c.count > c.capacity) drain(*tc, cls, c.capacity / 2);
    return;
  }
  auto& sh = shared_[cls];
  std::lock_guard lock(sh.mu);
  sh.list.push_front(*chunk);
  ++sh.count;
  arena->out.fetch_sub(1, std::memory_order_relaxed);
}

size_t SlabPool::refill(ThreadCache& tc, unsigned cls) noexcept {
  auto& c = tc.classes[cls];
  const size_t batch = std::max<uint32_t>(1, c.capacity / 2);
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t got = 0;
    {
      auto& sh = shared_[cls];
      std::lock_guard lock(sh.mu);
      OutTally tally(false);
      while (got < batch && !sh.list.empty()) {
        FreeChunk& chunk = sh.list.front();
        sh.list.pop_front();
        tally.count(chunk.arena);
        c.list.push_front(chunk);
        ++got;
      }
      sh.count -= got;
      if (got == 0) got = arenas_.carve(c.list, cls, batch);
    }
    if (got != 0) {
      c.count += static_cast<uint32_t>(got);
      return got;
    }
    if (attempt == 0) {
      // Exhausted for this class. Chunks of other classes may sit in fully free arenas
      // (possibly via our own cache): give ours back and re-carve such an arena.
      for (unsigned k = 0; k < kNumClasses; ++k) drain(tc, k, 0);
      if (recycle_free_arena()) continue;
    }
    return 0;  // the pool never grows: every arena is registered at create()
  }
  return 0;
}

void SlabPool::drain(ThreadCache& tc, unsigned cls, uint32_t keep) noexcept {
  auto& c = tc.classes[cls];
  if (c.count <= keep) return;
  auto& sh = shared_[cls];
  std::lock_guard lock(sh.mu);
  OutTally tally(true);
  while (c.count > keep) {
    FreeChunk& chunk = c.list.front();
    c.list.pop_front();
    --c.count;
    tally.count(chunk.arena);
    sh.list.push_front(chunk);
    ++sh.count;
  }
}

namespace {

// Locks every class mutex in index order (the lock order: detail/arena_set.h).
class AllClassLocks {
 public:
  explicit AllClassLocks(std::array<detail::SharedClass, kNumClasses>& shared) : shared_(shared) {
    for (auto& sh : shared_) sh.mu.lock();
  }
  ~AllClassLocks() {
    for (auto it = shared_.rbegin(); it != shared_.rend(); ++it) it->mu.unlock();
  }
  AllClassLocks(const AllClassLocks&) = delete;
  AllClassLocks& operator=(const AllClassLocks&) = delete;

 private:
  std::array<detail::SharedClass, kNumClasses>& shared_;
};

}  // namespace

bool SlabPool::recycle_free_arena() noexcept {
  AllClassLocks locks(shared_);
  return arenas_.recycle_one([this](ArenaState* arena) {
    // Its chunks leave the shared lists: the arena is carved afresh.
    for (auto& sh : shared_) {
      size_t removed = 0;
      sh.list.remove_and_dispose_if([arena](const FreeChunk& ch) { return ch.arena == arena; },
                                    [&removed](FreeChunk*) { ++removed; });
      sh.count -= removed;
    }
  });
}

void SlabPool::flush_thread_cache() noexcept {
  auto& slot = detail::tls_slots[slot_index()];
  ThreadCache* tc = slot.pool_id == id_ ? slot.cache : nullptr;
  if (tc == nullptr) {
    auto* state = detail::ThreadStateAccess::state();
    if (state == nullptr) return;
    for (auto [id, cache] : state->caches) {
      if (id == id_) tc = cache;
    }
  }
  if (tc == nullptr) return;
  for (unsigned c = 0; c < kNumClasses; ++c) drain(*tc, c, 0);
}

// ----------------------------------------------------------------------------- inspection

MemoryStats SlabPool::stats() const {
  MemoryStats s;
  counters_->fill(s);
  caches_.add_allocations(s.allocations);
  for (unsigned c = 0; c < kNumClasses; ++c)
    s.allocations[c] += uncached_allocations_[c].load(std::memory_order_relaxed);
  s.chunks_out += arenas_.chunks_out();
  return s;
}

}  // namespace rdmarepl::memory
