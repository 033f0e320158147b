// Leader side of the live knobs: what the leader can do with a tuner's knobs, how it makes
// them live, the extra poller threads' share of the shards, and the value-size totals the
// tuner's observation needs. The key -> shard mapping is fixed at create(); see
// docs/replication.md, "Live knobs".
#include <algorithm>

#include "batch_limits.h"
#include "leader.h"
#include "rdmarepl/replication/detail/batch_format.h"

namespace rdmarepl::replication::detail {

void Leader::init_live_knobs() noexcept {
  live_batch_bytes_.store(options_.batch_bytes, std::memory_order_relaxed);
  live_flush_ns_.store(
      static_cast<uint64_t>(std::chrono::nanoseconds(options_.flush_delay).count()),
      std::memory_order_relaxed);
  window_limit_.store(options_.retain_bytes, std::memory_order_relaxed);
}

void Leader::value_totals(double& count, double& sum, double& sq) const noexcept {
  count = sum = sq = 0;
  for (const auto& s : shards_) {
    count += static_cast<double>(s->value_count.load(std::memory_order_relaxed));
    sum += s->value_sum.load(std::memory_order_relaxed);
    sq += s->value_sq.load(std::memory_order_relaxed);
  }
}

size_t Leader::progress_worker(uint32_t worker, uint32_t workers) noexcept {
  // Worker 0 sweeps every shard and refreshes the channel-wide metrics (queue depth, lag);
  // worker w > 0 drives the shards i with i % workers == w. The per-shard lock is only
  // tried, so two workers never wait for each other.
  if (worker == 0) return progress();
  size_t work = sessions_.replies().poll(worker, workers);
  for (size_t i = worker; i < shards_.size(); i += workers) {
    Shard& s = *shards_[i];
    std::unique_lock lock(s.mu, std::try_to_lock);
    if (!lock.owns_lock()) continue;
    work += progress_locked(s);
  }
  return work;
}

void Leader::limit_engine_knobs(const tuning::Knobs& want, tuning::Knobs& eff) const {
  // Batches must fit a quarter of a follower's ring, and the retained window must keep room
  // for two of the largest records plus two batches (the rules of validate(), in
  // batch_limits.h).
  const uint64_t batch_max = std::max(
      kMinBatchBytes, std::min(max_live_batch_bytes(options_), window_batch_limit(options_)));
  eff.batch_bytes = std::clamp<uint64_t>(want.batch_bytes, kMinBatchBytes, batch_max);
  eff.flush_delay_us = std::min<uint32_t>(want.flush_delay_us, 1'000'000);
  // Carriers per follower (and poller threads, except in manual mode where the store
  // polls): at least one, at most one per shard.
  eff.shards = std::clamp<uint32_t>(want.shards, 1, options_.shards);
  // The usable part of the retained windows, which were registered at create().
  const uint64_t per_shard_min =
      std::min<uint64_t>(options_.retain_bytes, min_window_bytes(options_, eff.batch_bytes));
  const uint64_t per_shard =
      std::clamp<uint64_t>(want.pool_bytes / options_.shards, per_shard_min, options_.retain_bytes);
  eff.pool_bytes = per_shard / kBatchAlign * kBatchAlign * options_.shards;
}

void Leader::apply_engine_knobs(const tuning::Knobs& eff) noexcept {
  // Read by write() and progress_locked() without the knob lock: a shard's open batch is
  // sealed by the new size at its next record and by the new delay at its next progress().
  live_batch_bytes_.store(eff.batch_bytes, std::memory_order_relaxed);
  live_flush_ns_.store(uint64_t{eff.flush_delay_us} * 1000, std::memory_order_relaxed);
  window_limit_.store(eff.pool_bytes / options_.shards, std::memory_order_relaxed);
  // N carriers per follower: each shard moves to carrier shard % N at its next batch once
  // it has nothing in flight; the control thread connects new carriers (or takes them back
  // from the pool) and pools the ones no shard uses any more (leader_carriers.h).
  sessions_.set_active(eff.shards);
  metrics_.carriers.store(eff.shards, std::memory_order_relaxed);
}

}  // namespace rdmarepl::replication::detail
