// The training dataset: Samples as CSV with a header. The columns are feature_names() followed
// by the two outcome columns; the format is documented in docs/tuning.md so that any producer
// (the bench driver's sweeps, a live system's sample log) can write it.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/tuner.h"

namespace rdmarepl::tuning {

// "window_s,lat_p50_us,...,pool_bytes,dev_link_utilization,out_bytes_per_s,out_p99_us" (no
// newline): the features (features.h), a measured column that is not a feature, and the
// outcome.
std::string dataset_header();

// Writes the header and one line per sample. Missing optional values are empty cells.
void write_dataset(std::ostream& out, std::span<const Sample> samples);
Status write_dataset(const std::string& path, std::span<const Sample> samples);

// Reads a dataset. Columns are matched by name, so their order is free and unknown extra
// columns are ignored; every feature and outcome column must be present (wal_sync_p99_us and
// dev_link_utilization may be absent: older datasets lack them). An empty cell (or "nan") in
// an optional column means missing. Errors name the file, line and column.
Result<std::vector<Sample>> read_dataset(std::istream& in, const std::string& origin);
Result<std::vector<Sample>> read_dataset(const std::string& path);

}  // namespace rdmarepl::tuning
