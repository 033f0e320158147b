#include "uring.h"

#include <cerrno>

#include <fmt/format.h>

#ifdef RDMAREPL_WAL_URING
#include <liburing.h>
#endif

#include "iov_advance.h"

namespace rdmarepl::wal::detail {

#ifdef RDMAREPL_WAL_URING

struct Uring::Impl {
  io_uring ring{};
};

Uring::Uring() : impl_(std::make_unique<Impl>()) {}

Uring::~Uring() {
  if (impl_) io_uring_queue_exit(&impl_->ring);  // null when io_uring_queue_init failed
}

Result<std::unique_ptr<Uring>> Uring::create() {
  std::unique_ptr<Uring> u(new Uring());
  // One write is in flight at a time (appends hold the writer's mutex): a tiny ring.
  if (int rc = io_uring_queue_init(4, &u->impl_->ring, 0); rc < 0) {
    u->impl_.reset();
    return errno_error(-rc,
                       "io_uring_queue_init (the kernel or its policy refuses io_uring: "
                       "kernel.io_uring_disabled, a seccomp filter or RLIMIT_MEMLOCK)");
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&u->impl_->ring);
  const bool writev = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_WRITEV);
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!writev) {
    return Error(Errc::unsupported, "the kernel's io_uring does not support IORING_OP_WRITEV");
  }
  return u;
}

Status Uring::write_at(int fd, const std::string& path, uint64_t offset,
                       std::span<const iovec> iov_in) {
  iovec iov[8];
  if (iov_in.size() > 8 || iov_in.empty()) {
    return Error(Errc::invalid_argument,
                 fmt::format("Uring::write_at: {} buffers given, 1 to 8 supported", iov_in.size()));
  }
  size_t cnt = iov_in.size();
  for (size_t i = 0; i < cnt; ++i) iov[i] = iov_in[i];
  iovec* cur = iov;
  io_uring* ring = &impl_->ring;
  while (cnt > 0) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) {
      return Error(Errc::busy, fmt::format("io_uring submission queue full writing {}", path));
    }
    io_uring_prep_writev(sqe, fd, cur, static_cast<unsigned>(cnt), offset);
    int rc = 0;
    do {
      rc = io_uring_submit(ring);
    } while (rc == -EINTR);
    if (rc < 0) return errno_error(-rc, fmt::format("io_uring_submit (write to {})", path));
    io_uring_cqe* cqe = nullptr;
    do {
      rc = io_uring_wait_cqe(ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) return errno_error(-rc, fmt::format("io_uring_wait_cqe (write to {})", path));
    const int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    if (res == -EINTR || res == -EAGAIN) continue;
    if (res < 0)
      return errno_error(-res, fmt::format("io_uring writev({}, offset {})", path, offset));
    if (res == 0) {
      return errno_error(EIO,
                         fmt::format("io_uring writev({}, offset {}) wrote nothing", path, offset));
    }
    offset += static_cast<uint64_t>(res);
    detail::advance_iov(cur, cnt, static_cast<size_t>(res));
  }
  return ok_status();
}

#else  // !RDMAREPL_WAL_URING

struct Uring::Impl {};

Uring::Uring() = default;
Uring::~Uring() = default;

Result<std::unique_ptr<Uring>> Uring::create() {
  return Error(Errc::unsupported,
               "this build of rdmarepl has no io_uring support (configure with liburing-dev "
               "installed, RDMAREPL_WITH_URING=AUTO or ON)");
}

Status Uring::write_at(int, const std::string& path, uint64_t, std::span<const iovec>) {
  return Error(Errc::unsupported, fmt::format("io_uring write to {}: not built in", path));
}

#endif

}  // namespace rdmarepl::wal::detail
