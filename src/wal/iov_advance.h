// Moving an iovec array past the bytes a (partial) vectored write consumed: shared by the
// pwritev and io_uring submission paths.
#pragma once

#include <sys/uio.h>

#include <cstddef>

namespace rdmarepl::wal::detail {

// Drops the iovecs wholly written and trims the first partly written one. `cur` and `cnt`
// describe what is still to write.
inline void advance_iov(iovec*& cur, size_t& cnt, size_t written) noexcept {
  while (cnt > 0 && written >= cur->iov_len) {
    written -= cur->iov_len;
    ++cur;
    --cnt;
  }
  if (cnt > 0) {
    cur->iov_base = static_cast<char*>(cur->iov_base) + written;
    cur->iov_len -= written;
  }
}

}  // namespace rdmarepl::wal::detail
