// The synthetic cost model; docs/tuning.md ("Synthetic data") explains each term.
#include "rdmarepl/tuning/synthetic.h"

#include <algorithm>
#include <cmath>

namespace rdmarepl::tuning {

namespace {

double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  return std::exp(u(rng));
}

double jitter(std::mt19937_64* rng, double sigma) {
  if (rng == nullptr || sigma <= 0) return 1.0;
  std::normal_distribution<double> n(0.0, sigma);
  return std::exp(n(*rng));
}

}  // namespace

Observation CostModel::simulate(const Workload& w, const Knobs& k, std::mt19937_64* rng) const {
  const double rec = w.value_mean_bytes + record_header_bytes;
  const double lambda = std::max(w.offered_bytes_per_s, 1.0);
  const double n = std::max<double>(k.shards, 1);
  const double lambda_shard = lambda / n;
  const double b = static_cast<double>(k.batch_bytes);
  const double delay_s = k.flush_delay_us * 1e-6;
  const bool busy = k.poll_mode == PollingMode::busy;
  const bool periodic = k.poll_mode == PollingMode::sleep;
  const bool event = k.poll_mode == PollingMode::blocking;
  const double interval_s = std::max<double>(k.poll_interval_us, 1) * 1e-6;

  // A batch leaves when full or when its first record is flush_delay old, and holds at least
  // one record.
  const double b_eff = std::max(rec, std::min(b, lambda_shard * delay_s));
  const double records_per_batch = b_eff / rec;
  const double t_cpu = per_batch_s + records_per_batch * per_record_s + b_eff * per_byte_s +
                       (event ? event_cpu_per_batch_s : 0);
  const double t_wire = b_eff / link_bytes_per_s;
  const double poll_delay = busy ? 0 : periodic ? interval_s / 2 : event_wakeup_s;
  const double t_credit = base_rtt_s + t_wire + poll_delay + t_cpu;  // a batch holds its credit

  // The pool must hold the send slabs and the rings of every shard; a smaller pool leaves
  // fewer batches in flight.
  const double needed = n * batches_in_flight * b * 2;
  const double pool_share = std::min(1.0, static_cast<double>(k.pool_bytes) / needed);
  const double window = std::max(1.0, batches_in_flight * pool_share);

  const double cap_shard = std::min(b_eff / t_cpu, window * b_eff / t_credit);
  // Busy pollers occupy a core each; past the core count threads time-share.
  const double threads = busy ? n + 1 : 0.5 * n + 1;
  const double contention = std::min(1.0, cores / threads);
  const double cap = std::min(link_bytes_per_s, n * cap_shard * contention);

  const double rho = lambda / cap;
  const double x = std::min(lambda, cap) * jitter(rng, noise);
  const double batches_per_s = x / b_eff;

  const double fill = std::min(b_eff / lambda_shard, delay_s);  // a lone record waits for no one
  const double service = b_eff / (cap / n);
  const double rho_c = std::min(rho, 0.995);
  double wq = rho_c / (2 * (1 - rho_c)) * service;             // M/D/1 mean wait
  if (rho >= 1) wq = std::max(wq, 5e-3 * std::min(rho, 3.0));  // overload: backlog grows
  wq = std::min(wq, 20e-3);  // senders block on credit and pool beyond ~20 ms of backlog
  const double cv = w.value_mean_bytes > 0 ? w.value_stddev_bytes / w.value_mean_bytes : 0;
  const double tail = 1 + 0.3 * cv;
  const double lat_noise = jitter(rng, noise);
  const double p50 = (fill / 2 + t_credit + 0.7 * wq) * lat_noise;
  const double p90 = (0.9 * fill + t_credit + 2.3 * wq * tail) * lat_noise;
  const double p99 = (fill + 1.2 * t_credit + (periodic ? interval_s / 2 : 0) + 4.6 * wq * tail) *
                     lat_noise * jitter(rng, noise / 2);

  const double work_cores = batches_per_s * t_cpu;
  const double poll_cores = busy ? n : periodic ? n * periodic_poll_cpu_s / interval_s : 0;
  const double cpu = std::min(1.0, (work_cores + poll_cores) / cores * jitter(rng, noise));

  Observation o;
  o.window_s = window_s;
  o.latency_p50_us = p50 * 1e6;
  o.latency_p90_us = std::max(p90, p50) * 1e6;
  o.latency_p99_us = std::max(p99, std::max(p90, p50)) * 1e6;
  o.bytes_per_s = x;
  o.records_per_s = x / rec;
  o.value_mean_bytes = w.value_mean_bytes;
  o.value_stddev_bytes = w.value_stddev_bytes;
  o.queue_depth = rho < 1 ? std::min(n * rho_c / (1 - rho_c), n * window) : n * window;
  o.pending_bytes = o.queue_depth * b_eff;
  o.credit_stalls_per_s =
      batches_per_s * std::clamp((rho - 0.7) / 0.3, 0.0, 1.0) * (pool_share < 1 ? 1.0 : 0.3);
  o.cpu_utilization = cpu;
  o.membw_ratio = estimate_membw_ratio(x, copies_per_byte, mem_peak_bytes_per_s);
  o.reg_cache_hit_rate = 0.5 + 0.5 * pool_share;
  if (w.rdma_device) {
    o.device.tx_bytes_per_s = x * (1 + 64 / b_eff);  // payload + transport headers
    o.device.rx_bytes_per_s = batches_per_s * 64;    // acknowledgements
    o.device.tx_wait_per_s = x / link_bytes_per_s * 1e5 * std::max(0.0, rho - 0.8);
    o.device.retransmits_per_s = 0;
    o.device.rnr_naks_per_s = 0;
  }
  return o;
}

Workload random_workload(std::mt19937_64& rng) {
  Workload w;
  w.offered_bytes_per_s = log_uniform(rng, 50e6, 12e9);
  w.value_mean_bytes = log_uniform(rng, 64, 64 * 1024);
  std::uniform_real_distribution<double> cv(0, 1.5);
  w.value_stddev_bytes = w.value_mean_bytes * cv(rng);
  w.rdma_device = std::bernoulli_distribution(0.5)(rng);
  return w;
}

Knobs random_knobs(const KnobBounds& b, std::mt19937_64& rng) {
  auto lu = [&](const KnobRange& r) {
    double lo = std::max<double>(static_cast<double>(r.min), 1);
    return r.snap(static_cast<uint64_t>(log_uniform(rng, lo, static_cast<double>(r.max) + 1)));
  };
  Knobs k;
  k.batch_bytes = lu(b.batch_bytes);
  k.flush_delay_us = static_cast<uint32_t>(
      b.flush_delay_us.snap(std::uniform_int_distribution<uint64_t>(0, 400)(rng)));
  k.shards = static_cast<uint32_t>(
      std::uniform_int_distribution<uint64_t>(b.shards.min, b.shards.max)(rng));
  k.poll_mode =
      static_cast<PollingMode>(std::uniform_int_distribution<int>(0, kNumPollModes - 1)(rng));
  k.poll_interval_us = static_cast<uint32_t>(lu(b.poll_interval_us));
  k.pool_bytes = lu(b.pool_bytes);
  return clamp(k, b);
}

namespace {

Knobs neighbour(const Knobs& k, const KnobBounds& b, std::mt19937_64& rng) {
  Knobs c = k;
  int moves = std::uniform_int_distribution<int>(1, 2)(rng);
  for (int i = 0; i < moves; ++i) {
    bool up = std::bernoulli_distribution(0.5)(rng);
    auto times = [&](uint64_t v) { return up ? v * 2 : v / 2; };
    switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
      case 0:
        c.batch_bytes = times(c.batch_bytes);
        break;
      case 1:
        c.flush_delay_us =
            static_cast<uint32_t>(up ? c.flush_delay_us * 2 + 5 : c.flush_delay_us / 2);
        break;
      case 2:
        c.shards = up ? c.shards + 1 : (c.shards > 1 ? c.shards - 1 : 1);
        break;
      case 3:
        c.poll_mode =
            static_cast<PollingMode>(std::uniform_int_distribution<int>(0, kNumPollModes - 1)(rng));
        break;
      case 4:
        c.poll_interval_us = static_cast<uint32_t>(times(c.poll_interval_us));
        break;
      default:
        c.pool_bytes = times(c.pool_bytes);
        break;
    }
  }
  return clamp(c, b);
}

}  // namespace

std::vector<Sample> generate_dataset(std::size_t rows, uint64_t seed, const KnobBounds& bounds,
                                     const CostModel& model) {
  std::mt19937_64 rng(seed);
  std::vector<Sample> out;
  out.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    Workload w = random_workload(rng);
    Sample s;
    s.observed_under = random_knobs(bounds, rng);
    s.observation = model.simulate(w, s.observed_under, &rng);
    s.knobs = std::bernoulli_distribution(0.6)(rng) ? neighbour(s.observed_under, bounds, rng)
                                                    : random_knobs(bounds, rng);
    s.outcome = outcome_of(model.simulate(w, s.knobs, &rng));
    out.push_back(s);
  }
  return out;
}

}  // namespace rdmarepl::tuning
