// Optional persistent-memory backend of the WAL writer (WriterOptions::backend). Built when
// libpmem is found (CMake RDMAREPL_WITH_PMEM, AUTO by default); otherwise map() says so and
// the writer keeps the file backend (or fails, when pmem was required).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rdmarepl/core/result.h"

namespace rdmarepl::wal::detail {

// Whether this build contains the libpmem backend.
bool pmem_built() noexcept;

// Owns one mapping of a whole segment file made by pmem_map_file. Move-only; the
// destructor unmaps (pmem_unmap) and never throws.
class PmemMapping {
 public:
  PmemMapping() = default;
  PmemMapping(PmemMapping&& o) noexcept;
  PmemMapping& operator=(PmemMapping&& o) noexcept;
  PmemMapping(const PmemMapping&) = delete;
  PmemMapping& operator=(const PmemMapping&) = delete;
  ~PmemMapping();

  // Maps the existing file `path` whole (its size is the mapping's length) and asks
  // pmem_is_pmem whether stores to it are persistent once flushed: true on a DAX file
  // system (MAP_SYNC) or a device-DAX namespace, or when PMEM_IS_PMEM_FORCE=1 overrides it.
  static Result<PmemMapping> map(const std::string& path);

  [[nodiscard]] bool is_mapped() const noexcept { return addr_ != nullptr; }
  [[nodiscard]] bool is_pmem() const noexcept { return is_pmem_; }
  [[nodiscard]] size_t size() const noexcept { return len_; }

  // Copies every byte of `iov` to [offset, offset + total) with pmem_memcpy_nodrain, then
  // pmem_drain: the bytes are persistent when it returns (an x86 drain is a fence that
  // covers the stores and flushes of the calling CPU only, so the thread that copies is the
  // one that drains). Requires the range to lie inside the mapping. Never allocates.
  void write_persist(uint64_t offset, std::span<const iovec> iov) const noexcept;
  // pmem_drain: waits for this thread's outstanding flushes and non-temporal stores.
  static void drain() noexcept;

  // Unmaps now (the destructor's work, with the error reported).
  Status unmap();

 private:
  PmemMapping(void* addr, size_t len, bool is_pmem, std::string path) noexcept
      : addr_(addr), len_(len), is_pmem_(is_pmem), path_(std::move(path)) {}
  void* addr_ = nullptr;
  size_t len_ = 0;
  bool is_pmem_ = false;
  std::string path_;
};

}  // namespace rdmarepl::wal::detail
