// How a log Writer makes appends durable and where its frames go. The channel's
// ChannelOptions (durability, wal_backend) use these same enums.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdmarepl/metrics/histogram.h"

namespace rdmarepl::wal {

enum class Durability : uint8_t {
  none,      // append returns after write(2): the OS cache holds the frame
  batch,     // append returns after an fdatasync that covers the frame (group commit)
  interval,  // a background flusher syncs every WriterOptions::interval
};
std::string_view to_string(Durability d) noexcept;
std::span<const Durability> enum_values(Durability) noexcept;

// How appends reach the file. io_uring is optional: it needs a build with liburing
// (RDMAREPL_HAVE_URING in rdmarepl/features.h) and a kernel that allows it; otherwise the
// writer logs why and uses pwritev (Writer::submission() says which one is in use).
enum class Submission : uint8_t {
  pwrite,    // pwritev(2) on the appending thread
  io_uring,  // one IORING_OP_WRITEV per append, waited for before append returns
};
std::string_view to_string(Submission s) noexcept;

// Where frames go (docs/wal_format.md, "Backends"; the bytes in the segment files are the
// same either way). The persistent-memory backend needs a build with libpmem
// (RDMAREPL_HAVE_PMEM in rdmarepl/features.h) and a segment file that maps as persistent
// memory (pmem_map_file + pmem_is_pmem: a DAX file system, or PMEM_IS_PMEM_FORCE=1).
// The choice is made on the first segment and logged once (info) with its reason;
// Writer::backend() says which one is in use.
enum class Backend : uint8_t {
  automatic,  // pmem when the first segment maps as persistent memory, else file
  file,       // pwritev (or io_uring, see Submission) + fdatasync
  pmem,       // pmem_memcpy_nodrain + pmem_drain into mapped segments; create() fails
              // with an error naming the directory when it cannot be used
};
std::string_view to_string(Backend b) noexcept;  // "auto", "file", "pmem"
std::span<const Backend> enum_values(Backend) noexcept;

struct WriterOptions {
  // 64 MiB: large enough that rotation (one extra fdatasync + directory fsync) is rare,
  // small enough that deleting covered segments after a checkpoint frees space promptly.
  uint64_t segment_size = 64u << 20;
  Durability durability = Durability::batch;
  std::chrono::milliseconds interval{10};
  Submission submission = Submission::pwrite;  // file backend only
  Backend backend = Backend::automatic;
  // Optional latency histograms (nanoseconds; they must outlive the writer): each
  // group-commit sync (fdatasync, or the pmem drain), and each append (the write and,
  // under Durability::batch, the wait for its sync). The channel points them at its metrics.
  metrics::Histogram* sync_latency_ns = nullptr;
  metrics::Histogram* append_latency_ns = nullptr;
};

}  // namespace rdmarepl::wal
