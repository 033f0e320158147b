#include "commit_callbacks.h"

#include <algorithm>
#include <array>

namespace rdmarepl::replication::detail {

namespace {

constexpr size_t kFireChunk = 64;

struct LaterFirst {
  template <class E>
  bool operator()(const E& a, const E& b) const noexcept {
    return a.seq > b.seq;  // std::*_heap keep the "largest" on top: here, the lowest seq
  }
};

}  // namespace

void CommitCallbacks::init(uint32_t shards, size_t capacity_per_shard) {
  capacity_ = capacity_per_shard;
  shards_.clear();
  for (uint32_t i = 0; i < shards; ++i) {
    auto s = std::make_unique<Shard>();
    s->heap.reserve(capacity_per_shard);
    shards_.push_back(std::move(s));
  }
}

bool CommitCallbacks::push(Ticket t, CommitFn fn, void* ctx) noexcept {
  Shard& s = *shards_[t.shard];
  std::lock_guard lock(s.mu);
  if (s.heap.size() >= capacity_) return false;
  s.heap.push_back(Entry{t.seq, fn, ctx});  // within the reserved capacity: no allocation
  std::push_heap(s.heap.begin(), s.heap.end(), LaterFirst{});
  s.next.store(s.heap.front().seq, std::memory_order_release);
  pending_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

template <class Due>
size_t CommitCallbacks::pop_due(Shard& s, Due due, Entry* out, size_t max) noexcept {
  std::lock_guard lock(s.mu);
  size_t n = 0;
  while (n < max && !s.heap.empty() && due(s.heap.front().seq)) {
    std::pop_heap(s.heap.begin(), s.heap.end(), LaterFirst{});
    out[n++] = s.heap.back();
    s.heap.pop_back();
  }
  s.next.store(s.heap.empty() ? kNone : s.heap.front().seq, std::memory_order_release);
  pending_.fetch_sub(n, std::memory_order_acq_rel);
  return n;
}

size_t CommitCallbacks::fire_committed(uint32_t shard, uint64_t committed) noexcept {
  Shard& s = *shards_[shard];
  size_t fired = 0;
  std::array<Entry, kFireChunk> due{};
  const Status ok = ok_status();
  for (;;) {
    if (s.next.load(std::memory_order_acquire) > committed) return fired;
    const size_t n = pop_due(
        s, [committed](uint64_t seq) { return seq <= committed; }, due.data(), due.size());
    for (size_t i = 0; i < n; ++i) due[i].fn(due[i].ctx, Ticket{shard, due[i].seq}, ok);
    fired += n;
    if (n < due.size()) return fired;
  }
}

size_t CommitCallbacks::fail_all(uint32_t shard,
                                 const std::function<Status(uint64_t seq)>& why) noexcept {
  Shard& s = *shards_[shard];
  size_t fired = 0;
  std::array<Entry, kFireChunk> due{};
  for (;;) {
    const size_t n = pop_due(
        s, [](uint64_t) { return true; }, due.data(), due.size());
    for (size_t i = 0; i < n; ++i) {
      const Status st = why(due[i].seq);
      due[i].fn(due[i].ctx, Ticket{shard, due[i].seq}, st);
    }
    fired += n;
    if (n < due.size()) return fired;
  }
}

}  // namespace rdmarepl::replication::detail
