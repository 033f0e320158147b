// The arenas of one SlabPool (detail/arena_set.h).
#include "rdmarepl/memory/detail/arena_set.h"

#include <algorithm>

namespace rdmarepl::memory::detail {

ArenaSet::~ArenaSet() {
  for (auto& a : arenas_) {
    if (table_ != nullptr) table_->erase(a->arena.base());
  }
  arenas_.clear();
}

Status ArenaSet::add(size_t bytes, const ArenaOptions& options, const Registrar& registrar,
                     Counters* counters) {
  auto arena = Arena::create(bytes, options, registrar, counters);
  if (!arena.ok()) return std::move(arena).error();
  auto state = std::make_unique<ArenaState>();
  state->arena = std::move(*arena);
  state->keys = state->arena.region().keys;
  if (table_ != nullptr) {
    auto region = state->arena.region();
    RDMAREPL_TRY(table_->insert(region));
  }
  std::lock_guard lock(mu_);
  arenas_.push_back(std::move(state));
  return ok_status();
}

size_t ArenaSet::carve(FreeList& into, unsigned cls, size_t max) noexcept {
  const size_t size = class_size(cls);
  const size_t align = std::min(size, kPageSize);
  std::lock_guard lock(mu_);
  for (auto& a : arenas_) {
    const size_t start = (a->carved + align - 1) / align * align;
    if (start >= a->arena.size()) continue;
    const size_t n = std::min(max, (a->arena.size() - start) / size);
    if (n == 0) continue;
    for (size_t i = 0; i < n; ++i)
      into.push_front(*make_free_chunk(a->arena.base() + start + i * size, a.get(), size));
    a->carved = start + n * size;
    a->out.fetch_add(n, std::memory_order_relaxed);
    return n;
  }
  return 0;
}

std::pair<std::byte*, ArenaState*> ArenaSet::carve_run(size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  for (auto& a : arenas_) {
    const size_t start = (a->carved + kPageSize - 1) / kPageSize * kPageSize;
    if (start > a->arena.size() || a->arena.size() - start < bytes) continue;
    a->carved = start + bytes;
    a->out.fetch_add(bytes / kMaxClassSize, std::memory_order_relaxed);
    RDMAREPL_MEMORY_UNPOISON(a->arena.base() + start, bytes);
    return {a->arena.base() + start, a.get()};
  }
  return {nullptr, nullptr};
}

size_t ArenaSet::count() const {
  std::lock_guard lock(mu_);
  return arenas_.size();
}

size_t ArenaSet::capacity_bytes() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& a : arenas_) n += a->arena.size();
  return n;
}

uint64_t ArenaSet::chunks_out() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& a : arenas_) n += a->out.load(std::memory_order_relaxed);
  return n;
}

std::vector<transport::RegisteredRegion> ArenaSet::regions() const {
  std::lock_guard lock(mu_);
  std::vector<transport::RegisteredRegion> out;
  for (const auto& a : arenas_) out.push_back(a->arena.region());
  return out;
}

}  // namespace rdmarepl::memory::detail
