#include "rdmarepl/memory/external_region.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <array>
#include <cerrno>
#include <cstdint>

#include "rdmarepl/memory/arena.h"

namespace rdmarepl::memory {
namespace {

// mincore() fails with ENOMEM when any page of the range is unmapped; it does not fault
// pages in and works on every kind of mapping.
bool mapped(uintptr_t addr, size_t length) {
  std::array<unsigned char, 1024> vec;  // one byte per page: 4 MiB per call
  const size_t step = vec.size() * kPageSize;
  for (size_t off = 0; off < length; off += step) {
    size_t n = std::min(step, length - off);
    if (mincore(reinterpret_cast<void*>(addr + off), n, vec.data()) != 0) return false;
  }
  return true;
}

// The first unmapped page of a range known to contain one (binary search on prefixes).
uintptr_t first_unmapped(uintptr_t addr, size_t length) {
  size_t lo = 0, hi = length / kPageSize;  // prefix of `lo` pages is mapped; `hi` pages is not
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (mapped(addr, mid * kPageSize)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return addr + lo * kPageSize;
}

}  // namespace

Status check_external_region(const void* addr, size_t length, size_t max_size) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (addr == nullptr || length == 0)
    return Error(Errc::invalid_argument,
                 fmt::format("memory: cannot register the region at {} of {} B: pass a non-null "
                             "address and a non-zero length",
                             addr, length));
  if (a % kPageSize != 0)
    return Error(Errc::misaligned,
                 fmt::format("memory: region address {:#x} is not aligned to {} B (it is {} B "
                             "past a page boundary); map the region with mmap or round the "
                             "address down to a {} B boundary",
                             a, kPageSize, a % kPageSize, kPageSize));
  if (length % kPageSize != 0)
    return Error(
        Errc::misaligned,
        fmt::format("memory: region length {} B at {:#x} is not a multiple of {} B; "
                    "round it up to {} B",
                    length, a, kPageSize, (length + kPageSize - 1) / kPageSize * kPageSize));
  if (length > max_size)
    return Error(Errc::too_large,
                 fmt::format("memory: region of {} B at {:#x} exceeds the device's largest "
                             "registration (max_mr_size {} B); register it in pieces of at most "
                             "{} B",
                             length, a, max_size, max_size));
  if (a + length < a)
    return Error(
        Errc::invalid_argument,
        fmt::format("memory: region at {:#x} of {} B wraps around the address space", a, length));
  if (!mapped(a, length))
    return Error(Errc::not_mapped,
                 fmt::format("memory: range [{:#x}, {:#x}) is not mapped in this process (first "
                             "unmapped page at {:#x}); register only memory that is mapped and "
                             "stays mapped until it is deregistered",
                             a, a + length, first_unmapped(a, length)));
  return ok_status();
}

}  // namespace rdmarepl::memory
