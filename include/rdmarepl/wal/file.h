// The few file-system operations the WAL needs, as a move-only file handle and free
// functions that return Status with messages naming the path and what to do.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::wal {

// Owns one file descriptor. The destructor closes it and never throws.
class File {
 public:
  File() = default;
  explicit File(int fd, std::string path) noexcept : fd_(fd), path_(std::move(path)) {}
  File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  // flags as for open(2); O_CLOEXEC is always added.
  static Result<File> open(const std::string& path, int flags, unsigned mode = 0644);

  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  Result<uint64_t> size() const;
  // Reads exactly out.size() bytes at `offset` (fewer only at end of file: the count read).
  Result<size_t> read_at(uint64_t offset, std::span<uint8_t> out) const;
  // Writes every byte of `iov` at `offset` (retrying short writes and EINTR).
  Status write_at(uint64_t offset, std::span<const iovec> iov) const;
  Status write_at(uint64_t offset, std::span<const uint8_t> bytes) const;
  Status sync_data() const;  // fdatasync
  Status sync() const;       // fsync
  Status truncate(uint64_t size) const;
  // Reserves [0, size) so that later writes below `size` need no block allocation and
  // fdatasync needs no metadata update; the file's size becomes max(size, current).
  Status preallocate(uint64_t size) const;
  Status close();

 private:
  int fd_ = -1;
  std::string path_;
};

Status sync_dir(const std::string& dir);
Status make_dir(const std::string& dir);  // creates it if missing (one level)
Result<std::vector<std::string>> list_dir(const std::string& dir);
Status remove_file(const std::string& path);
Status rename_file(const std::string& from, const std::string& to);
Result<std::vector<uint8_t>> read_whole_file(const std::string& path);

}  // namespace rdmarepl::wal
