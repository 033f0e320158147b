#include "pmem.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#ifdef RDMAREPL_WAL_PMEM
#include <libpmem.h>
#endif

namespace rdmarepl::wal::detail {

PmemMapping::PmemMapping(PmemMapping&& o) noexcept
    : addr_(std::exchange(o.addr_, nullptr)),
      len_(std::exchange(o.len_, 0)),
      is_pmem_(std::exchange(o.is_pmem_, false)),
      path_(std::move(o.path_)) {}

PmemMapping& PmemMapping::operator=(PmemMapping&& o) noexcept {
  if (this != &o) {
    if (addr_ != nullptr) (void)unmap();
    addr_ = std::exchange(o.addr_, nullptr);
    len_ = std::exchange(o.len_, 0);
    is_pmem_ = std::exchange(o.is_pmem_, false);
    path_ = std::move(o.path_);
  }
  return *this;
}

PmemMapping::~PmemMapping() {
  if (addr_ == nullptr) return;
  if (auto st = unmap(); !st) {
    // Nothing to propagate from a destructor; the data was drained when it was written.
    std::fprintf(stderr, "rdmarepl: %s\n", st.error().to_string().c_str());
  }
}

#ifdef RDMAREPL_WAL_PMEM

bool pmem_built() noexcept {
  return true;
}

Result<PmemMapping> PmemMapping::map(const std::string& path) {
  size_t len = 0;
  int mapped_pmem = 0;
  void* addr = pmem_map_file(path.c_str(), 0, 0, 0, &len, &mapped_pmem);
  if (addr == nullptr) {
    const int err = errno;
    const char* why = pmem_errormsg();
    return errno_error(err, fmt::format("pmem_map_file({}): {}", path,
                                        why != nullptr && *why != '\0' ? why : "failed"));
  }
  const bool is_pmem = pmem_is_pmem(addr, len) != 0;
  return PmemMapping(addr, len, is_pmem, path);
}

void PmemMapping::write_persist(uint64_t offset, std::span<const iovec> iov) const noexcept {
  auto* dst = static_cast<char*>(addr_) + offset;
  for (const iovec& v : iov) {
    pmem_memcpy_nodrain(dst, v.iov_base, v.iov_len);
    dst += v.iov_len;
  }
  pmem_drain();
}

void PmemMapping::drain() noexcept {
  pmem_drain();
}

Status PmemMapping::unmap() {
  if (addr_ == nullptr) return ok_status();
  void* addr = std::exchange(addr_, nullptr);
  const size_t len = std::exchange(len_, 0);
  if (pmem_unmap(addr, len) != 0)
    return errno_error(errno, fmt::format("pmem_unmap({}, {} bytes)", path_, len));
  return ok_status();
}

#else  // !RDMAREPL_WAL_PMEM

bool pmem_built() noexcept {
  return false;
}

Result<PmemMapping> PmemMapping::map(const std::string& path) {
  return Error(Errc::unsupported,
               fmt::format("cannot map {}: this build of rdmarepl has no persistent-memory "
                           "backend (configure with libpmem-dev installed, "
                           "RDMAREPL_WITH_PMEM=AUTO or ON)",
                           path));
}

void PmemMapping::write_persist(uint64_t, std::span<const iovec>) const noexcept {}

void PmemMapping::drain() noexcept {}

Status PmemMapping::unmap() {
  addr_ = nullptr;
  len_ = 0;
  return ok_status();
}

#endif

}  // namespace rdmarepl::wal::detail
