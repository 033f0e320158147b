// rdmarepl-bench --sweep: the tuning dataset from real runs (docs/tuning.md).
#pragma once

#include "flags.h"

namespace rdmarepl::bench {

// Runs the sweep the flags describe and writes the dataset; returns the exit code.
int run_sweep(const kvdemo::Flags& flags);
// --phased (benchmarks/tuning/phased.cc): the phased evaluation of the tuners.
int run_phased(const kvdemo::Flags& flags);

}  // namespace rdmarepl::bench
