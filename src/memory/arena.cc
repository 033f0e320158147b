#include "rdmarepl/memory/arena.h"

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <atomic>
#include <cerrno>
#include <cstring>

#include "rdmarepl/core/log.h"
#include "rdmarepl/memory/counters.h"

namespace rdmarepl::memory {
namespace {

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

void* map_anonymous(size_t bytes, int extra_flags) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// The fallback is logged once per process at info level (then at debug level) so that a
// machine without reserved huge pages does not flood the log with one line per arena.
void log_huge_page_fallback(size_t bytes, int err) {
  static std::atomic<bool> logged{false};
  auto level = logged.exchange(true) ? log::Level::debug : log::Level::info;
  log::logf(level,
            "memory: no 2 MiB huge pages for a {} B arena (mmap MAP_HUGETLB: {}); using 4 KiB "
            "pages. To use huge pages reserve them, e.g. `sysctl vm.nr_hugepages={}`",
            bytes, std::strerror(err), bytes / kHugePageSize);
}

}  // namespace

Result<Arena> Arena::create(size_t bytes, const ArenaOptions& options, const Registrar& registrar,
                            Counters* counters) {
  if (bytes == 0)
    return Error(Errc::invalid_argument,
                 "memory: an arena of 0 bytes was requested; pass a size "
                 "of at least one page (4096 B)");
  Arena a;
  if (options.huge_pages) {
    size_t huge_bytes = round_up(bytes, kHugePageSize);
    if (void* p = map_anonymous(huge_bytes, MAP_HUGETLB)) {
      a.base_ = static_cast<std::byte*>(p);
      a.size_ = huge_bytes;
      a.huge_ = true;
    } else {
      log_huge_page_fallback(huge_bytes, errno);
    }
  }
  if (a.base_ == nullptr) {
    size_t small_bytes = round_up(bytes, kPageSize);
    void* p = map_anonymous(small_bytes, 0);
    if (p == nullptr)
      return errno_error(errno, fmt::format("memory: mmap of a {} B arena failed", small_bytes));
    a.base_ = static_cast<std::byte*>(p);
    a.size_ = small_bytes;
  }
  a.registrar_ = &registrar;
  a.region_.addr = a.base_;
  a.region_.length = a.size_;
  a.region_.access = options.access;
  if (registrar.registers()) {
    auto region = register_counted(registrar, counters, a.base_, a.size_, options.access);
    // On failure `a` unmaps itself and, not being registered, deregisters nothing.
    if (!region.ok()) {
      const auto& e = region.error();
      return Error(e.code(), fmt::format("memory: registering a {} B arena at {} failed: {}",
                                         a.size_, static_cast<void*>(a.base_), e.message()));
    }
    a.region_ = *region;
    a.registered_ = true;
  }
  if (counters != nullptr) {
    counters->add(counters->arenas);
    counters->add(counters->bytes_mapped, a.size_);
  }
  a.counters_ = counters;  // only now: a failed create must not undo counts it never made
  return a;
}

void Arena::release() noexcept {
  if (base_ == nullptr) return;
  if (registered_) deregister_counted(*registrar_, counters_, region_);
#if defined(__SANITIZE_ADDRESS__)
  // The slab poisons free chunks; the address range may be mapped again by someone else.
  ASAN_UNPOISON_MEMORY_REGION(base_, size_);
#endif
  munmap(base_, size_);
  if (counters_ != nullptr) {
    counters_->sub(counters_->arenas, 1);
    counters_->sub(counters_->bytes_mapped, size_);
  }
  base_ = nullptr;
  size_ = 0;
  registered_ = false;
}

void Arena::steal(Arena& other) noexcept {
  base_ = other.base_;
  size_ = other.size_;
  huge_ = other.huge_;
  registered_ = other.registered_;
  region_ = other.region_;
  registrar_ = other.registrar_;
  counters_ = other.counters_;
  other.base_ = nullptr;
  other.size_ = 0;
  other.registered_ = false;
}

}  // namespace rdmarepl::memory
