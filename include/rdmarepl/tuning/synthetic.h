// A synthetic cost model of a replication channel, used to generate training data until the
// bench driver's sweeps provide measured data, and to test tuners against a known answer.
// It is physically motivated, not measured: docs/tuning.md ("Synthetic data") derives each
// term. Nothing about a real system should be concluded from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "rdmarepl/tuning/knobs.h"
#include "rdmarepl/tuning/observation.h"
#include "rdmarepl/tuning/tuner.h"

namespace rdmarepl::tuning {

// The workload a channel is offered during a window.
struct Workload {
  double offered_bytes_per_s = 1e9;
  double value_mean_bytes = 1024;
  double value_stddev_bytes = 256;
  bool rdma_device = true;  // device counters present (verbs) or absent (TCP)
};

// Constants of the model; defaults describe a 100 Gb/s RNIC in an 8-core host.
struct CostModel {
  double link_bytes_per_s = 12.5e9;  // 100 Gb/s
  double per_batch_s = 4e-6;         // post, completion and ack handling per batch
  double per_record_s = 0.15e-6;     // encode + CRC + apply per record
  double per_byte_s = 0.05e-9;       // one copy at ~20 GB/s per core
  double record_header_bytes = 40;
  double base_rtt_s = 3e-6;
  double event_wakeup_s = 8e-6;         // completion-channel wake-up in event mode
  double event_cpu_per_batch_s = 2e-6;  // its syscall cost
  double periodic_poll_cpu_s = 0.3e-6;  // one empty CQ poll
  int cores = 8;
  int batches_in_flight = 8;  // ring credits per shard
  double mem_peak_bytes_per_s = 40e9;
  double copies_per_byte = 3;  // encode, WAL, send
  double noise = 0.05;         // sigma of the multiplicative log-normal noise
  double window_s = 0.1;

  // The observation of one window of `w` under `k`. `rng` == nullptr gives the noise-free
  // expectation.
  Observation simulate(const Workload& w, const Knobs& k, std::mt19937_64* rng) const;
};

// A random workload: offered load log-uniform in [50 MB/s, 12 GB/s], mean value size
// log-uniform in [64 B, 64 KiB], coefficient of variation in [0, 1.5].
Workload random_workload(std::mt19937_64& rng);
// Random knobs inside `b`, log-uniform for the multiplicative knobs.
Knobs random_knobs(const KnobBounds& b, std::mt19937_64& rng);

// `rows` samples: a random workload observed under random knobs, then the outcome under
// either a random setting or a neighbour of the first (the neighbourhood a tuner explores).
std::vector<Sample> generate_dataset(std::size_t rows, uint64_t seed, const KnobBounds& bounds,
                                     const CostModel& model = {});

}  // namespace rdmarepl::tuning
