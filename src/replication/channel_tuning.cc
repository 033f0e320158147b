// Live knobs and the channel's tuner: apply_knobs() (the control-plane call that moves the
// knobs), the poller threads it starts and retires, the Observation built from the channel's
// own metrics, and the TunerRunner that ties them together. See docs/replication.md,
// "Live knobs".
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <system_error>

#include "core_base.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/tuning/registry.h"

namespace rdmarepl::replication::detail {

namespace {

uint32_t interval_us(std::chrono::microseconds d) noexcept {
  return static_cast<uint32_t>(std::clamp<int64_t>(d.count(), 1, 1'000'000));
}

// The part of the cumulative histogram `now` recorded since `before`.
metrics::Histogram::Snapshot window_of(const metrics::Histogram::Snapshot& now,
                                       const metrics::Histogram::Snapshot& before) noexcept {
  metrics::Histogram::Snapshot w;
  for (size_t i = 0; i < w.buckets.size(); ++i)
    w.buckets[i] = now.buckets[i] - std::min(now.buckets[i], before.buckets[i]);
  w.count = now.count - std::min(now.count, before.count);
  w.sum = now.sum - std::min(now.sum, before.sum);
  w.max = now.max;  // an upper bound for the window
  return w;
}

}  // namespace

CoreBase::CoreBase(const ChannelOptions& options, std::unique_ptr<transport::Transport> transport)
    : options_(options),
      transport_(std::move(transport)),
      live_polling_(options.polling),
      live_poll_interval_us_(interval_us(options.poll_interval)) {
  knobs_.batch_bytes = options.batch_bytes;
  knobs_.flush_delay_us =
      static_cast<uint32_t>(std::clamp<int64_t>(options.flush_delay.count(), 0, 1'000'000));
  knobs_.shards = 1;
  // The polling knob is the poller's mode; with manual polling (no poller) it reads busy.
  knobs_.poll_mode = options.polling == PollingMode::manual ? PollingMode::busy : options.polling;
  knobs_.poll_interval_us = interval_us(options.poll_interval);
  knobs_.pool_bytes = uint64_t{options.shards} *
                      (options.role == Role::leader ? options.retain_bytes : options.ring_bytes);
}

void CoreBase::limit_engine_knobs(const tuning::Knobs&, tuning::Knobs&) const {}
void CoreBase::apply_engine_knobs(const tuning::Knobs&) noexcept {}
void CoreBase::value_totals(double& count, double& sum, double& sq) const noexcept {
  count = sum = sq = 0;
}

tuning::Knobs CoreBase::knobs() const {
  std::lock_guard lock(knob_mu_);
  return knobs_;
}

std::optional<tuning::RunnerStats> CoreBase::tuner_stats() const {
  if (!runner_) return std::nullopt;
  return runner_->stats();
}

Status CoreBase::set_workers(uint32_t n) {
  const auto current = static_cast<uint32_t>(extra_workers_.size() + 1);
  if (n == current) return ok_status();
  if (n < current) {
    workers_.store(n, std::memory_order_release);
    while (extra_workers_.size() + 1 > n) {
      extra_workers_.back().join();  // it sees workers_ and returns after its current round
      extra_workers_.pop_back();
    }
    return ok_status();
  }
  try {
    for (uint32_t w = current; w < n; ++w) {
      workers_.store(w + 1, std::memory_order_release);
      extra_workers_.emplace_back([this, w] { poll_loop(w); });
    }
  } catch (const std::system_error& e) {
    workers_.store(static_cast<uint32_t>(extra_workers_.size() + 1), std::memory_order_release);
    return Error(e.code(),
                 fmt::format("cannot start poller thread {} of {}: {}; the channel "
                             "keeps {} poller thread(s)",
                             extra_workers_.size() + 1, n, e.what(), extra_workers_.size() + 1));
  }
  return ok_status();
}

Status CoreBase::apply_knobs(const tuning::Knobs& want) {
  std::lock_guard lock(knob_mu_);
  if (threads_stopped_)
    return Error(Errc::closed, "the replication channel is closed; its knobs no longer change");
  tuning::Knobs eff = knobs_;
  // Polling: the pollers exist only when the channel was created with a poller; in manual
  // mode the store drives progress() and the polling knobs do not apply.
  if (options_.polling != PollingMode::manual) {
    eff.poll_mode = want.poll_mode;
    eff.poll_interval_us = std::clamp<uint32_t>(want.poll_interval_us, 1, 1'000'000);
  }
  limit_engine_knobs(want, eff);
  if (eff == knobs_) return ok_status();

  Status st = ok_status();
  if (eff.shards != knobs_.shards && options_.polling != PollingMode::manual) {
    st = set_workers(eff.shards);
    eff.shards = static_cast<uint32_t>(extra_workers_.size() + 1);
    if (eff.shards != knobs_.shards) ChannelMetrics::add(metrics_.worker_changes);
  }
  live_poll_interval_us_.store(eff.poll_interval_us, std::memory_order_relaxed);
  if (options_.polling != PollingMode::manual)
    live_polling_.store(eff.poll_mode, std::memory_order_relaxed);
  apply_engine_knobs(eff);
  ChannelMetrics::add(metrics_.knob_changes);
  log::debug("rdmarepl {}: knobs {} -> {} (asked for {})", to_string(options_.role),
             tuning::to_string(knobs_), tuning::to_string(eff), tuning::to_string(want));
  knobs_ = eff;
  return st;
}

tuning::Observation CoreBase::observe_window(WindowState& w) {
  std::lock_guard lock(w.mu);
  tuning::Observation o;
  const uint64_t now = mono_ns();
  const MetricsSnapshot m = metrics();  // with ack_latency_ns, summed over the shards
  double vc = 0, vs = 0, vq = 0;
  value_totals(vc, vs, vq);
  const bool verbs = transport_->name() == "verbs";
  if (!w.primed) {  // the first window starts at the channel's creation
    w.primed = true;
    w.t_ns = now;
    w.cpu.sample();
    if (verbs) w.device.sample();
    w.last = m;
    w.value_count = vc;
    w.value_sum = vs;
    w.value_sq = vq;
    return o;
  }
  const double dt = static_cast<double>(now - w.t_ns) / 1e9;
  o.window_s = dt;
  const auto lat = window_of(m.ack_latency_ns, w.last.ack_latency_ns);
  o.latency_p50_us = static_cast<double>(lat.percentile(0.50)) / 1e3;
  o.latency_p90_us = static_cast<double>(lat.percentile(0.90)) / 1e3;
  o.latency_p99_us = static_cast<double>(lat.percentile(0.99)) / 1e3;
  if (dt > 0) {
    o.records_per_s = static_cast<double>(m.records_replicated - w.last.records_replicated) / dt;
    o.bytes_per_s = static_cast<double>(m.bytes_replicated - w.last.bytes_replicated) / dt;
    o.credit_stalls_per_s = static_cast<double>(m.credit_stalls - w.last.credit_stalls) / dt;
  }
  const double n = vc - w.value_count;
  if (n > 0) {
    o.value_mean_bytes = (vs - w.value_sum) / n;
    const double var = (vq - w.value_sq) / n - o.value_mean_bytes * o.value_mean_bytes;
    o.value_stddev_bytes = var > 0 ? std::sqrt(var) : 0.0;
  }
  o.queue_depth = static_cast<double>(m.queue_depth);
  // Batches queued times the mean sealed batch size (of this window, else of all time).
  const auto batches = window_of(m.batch_bytes, w.last.batch_bytes);
  o.pending_bytes = o.queue_depth * (batches.count ? batches.mean() : m.batch_bytes.mean());
  o.cpu_utilization = w.cpu.sample();
  if (verbs) o.device = w.device.sample();
  // Memory-bandwidth ratio (docs/tuning.md): each replicated byte is written once into its
  // batch and read once by the transport, and written once more into the log when there is
  // one. Absent without the machine's bandwidth (TuningOptions).
  o.membw_ratio = tuning::estimate_membw_ratio(o.bytes_per_s, options_.wal_dir.empty() ? 2 : 3,
                                               options_.tuning.memory_bandwidth_bytes_per_s);
  // Registration-cache hit rate: of the values that lay in a registered store region, the
  // share whose registration was cached (absent in a window without any).
  const uint64_t hits = m.region_cache_hits - w.last.region_cache_hits;
  const uint64_t misses = m.region_cache_misses - w.last.region_cache_misses;
  if (hits + misses > 0)
    o.reg_cache_hit_rate = static_cast<double>(hits) / static_cast<double>(hits + misses);
  // The log's syncs in the window (absent without a log, or when it did not sync).
  const auto syncs = window_of(m.wal_sync_latency_ns, w.last.wal_sync_latency_ns);
  if (syncs.count > 0) o.wal_sync_p99_us = static_cast<double>(syncs.percentile(0.99)) / 1e3;
  w.t_ns = now;
  w.last = m;
  w.value_count = vc;
  w.value_sum = vs;
  w.value_sq = vq;
  return o;
}

Status CoreBase::start_tuner() {
  const TuningOptions& t = options_.tuning;
  std::unique_ptr<tuning::Tuner> tuner;
  const tuning::Knobs initial = tuning::clamp(knobs(), t.bounds);
  if (t.make_tuner) {
    tuner = t.make_tuner();
    if (!tuner)
      return Error(Errc::invalid_argument,
                   "ChannelOptions::tuning.make_tuner returned no tuner; return an instance or "
                   "leave it empty to use tuning.tuner");
  } else {
    tuning::TunerConfig cfg;
    cfg.bounds = t.bounds;
    cfg.initial = initial;
    cfg.latency_target_p99_us = t.latency_target_p99_us;
    cfg.heuristic = t.heuristic;
    cfg.model = t.model;
    auto made = tuning::make_tuner(t.tuner, cfg);
    if (!made.ok())
      return Error(made.error().code(), fmt::format("ChannelOptions::tuning.tuner = \"{}\": {}",
                                                    t.tuner, made.error().message()));
    tuner = std::move(made).value();
  }
  (void)observe_window(tuner_window_);  // the first window starts now
  tuning::RunnerOptions ro;
  ro.period = t.period;
  ro.learn = t.learn;
  auto runner = tuning::TunerRunner::create(
      std::move(tuner), t.bounds, initial,
      [this] {
        ChannelMetrics::add(metrics_.tuner_decisions);
        return observe_window(tuner_window_);
      },
      [this](const tuning::Knobs& k) {
        if (Status st = apply_knobs(k); !st.ok())
          log::warn("rdmarepl tuner: applying {} failed: {}", tuning::to_string(k),
                    st.error().message());
      },
      ro);
  if (!runner.ok()) return std::move(runner).error();
  runner_ = std::move(runner).value();
  return runner_->start();
}

}  // namespace rdmarepl::replication::detail
