// Optional io_uring submission of WAL appends (WriterOptions::submission). Built when
// liburing is found (CMake RDMAREPL_WITH_URING, AUTO by default); otherwise create() says
// so and the writer keeps pwritev.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rdmarepl/core/result.h"

namespace rdmarepl::wal::detail {

class Uring {
 public:
  // Sets up a small ring and checks that the kernel supports IORING_OP_WRITEV. Fails with
  // a message saying why io_uring cannot be used (not built in, refused by the kernel or
  // its policy, e.g. kernel.io_uring_disabled or a seccomp filter).
  static Result<std::unique_ptr<Uring>> create();
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  // Writes every byte of `iov` (at most 8 pieces) at `offset` of `fd`, waiting for the
  // completion (the bytes are in the page cache when it returns, as after pwritev).
  // Resubmits short writes and EINTR/EAGAIN. Single caller at a time; never allocates.
  Status write_at(int fd, const std::string& path, uint64_t offset, std::span<const iovec> iov);

 private:
  Uring();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmarepl::wal::detail
