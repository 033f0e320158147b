#include "rdmarepl/memory/hybrid_pool.h"

namespace rdmarepl::memory {

Result<std::unique_ptr<HybridPool>> HybridPool::create(const HybridOptions& options,
                                                       Registrar registrar) {
  if (!registrar.registers())
    return Error(Errc::invalid_argument,
                 "memory: a hybrid pool needs a registrar that registers (transport_registrar() "
                 "or local_registrar())");
  std::unique_ptr<HybridPool> pool(new HybridPool());
  pool->table_ = std::make_unique<TranslationTable>(&pool->counters_);
  pool->cache_ = std::make_unique<RegistrationCache>(registrar, options.cache, &pool->counters_,
                                                     pool->table_.get());
  auto registered =
      SlabPool::create(options.registered, registrar, &pool->counters_, pool->table_.get());
  if (!registered.ok()) return std::move(registered).error();
  pool->registered_ = std::move(*registered);
  // The ordinary pool is not in the translation table: it has no keys to translate to.
  auto ordinary = SlabPool::create(options.ordinary, no_registrar(), &pool->ordinary_counters_);
  if (!ordinary.ok()) return std::move(ordinary).error();
  pool->ordinary_ = std::move(*ordinary);
  return pool;
}

MemoryStats HybridPool::stats() const {
  MemoryStats s = registered_->stats();
  MemoryStats o = ordinary_->stats();
  for (unsigned c = 0; c < kNumClasses; ++c) s.allocations[c] += o.allocations[c];
  s.failed_allocations += o.failed_allocations;
  s.arenas += o.arenas;
  s.bytes_mapped += o.bytes_mapped;
  s.arenas_released += o.arenas_released;
  return s;
}

}  // namespace rdmarepl::memory
