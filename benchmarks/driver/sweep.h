// rdmarepl-bench --sweep: the tuning dataset from real runs (docs/tuning.md).
#pragma once

#include "live_cluster.h"

namespace rdmarepl::bench {

// Runs the sweep the flags describe and writes the dataset; returns the exit code.
int run_sweep(const LiveArgs& args);
// --phased (benchmarks/tuning/phased.cc): the phased evaluation of the tuners.
int run_phased(const LiveArgs& args);
// --burst (benchmarks/tuning/burst.cc): the burst experiment.
int run_burst(const LiveArgs& args);
// --shift (benchmarks/tuning/shift.cc): online learning after the environment moves.
int run_shift(const LiveArgs& args);

}  // namespace rdmarepl::bench
