#include "rdmarepl/wal/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "iov_advance.h"

namespace rdmarepl::wal {

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    // Nothing to propagate from a destructor; data durability never depends on close().
    std::fprintf(stderr, "rdmarepl: close(%s) failed: errno %d\n", path_.c_str(), errno);
  }
}

Result<File> File::open(const std::string& path, int flags, unsigned mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno_error(errno, fmt::format("open({})", path));
  return File(fd, path);
}

Result<uint64_t> File::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return errno_error(errno, fmt::format("fstat({})", path_));
  return static_cast<uint64_t>(st.st_size);
}

Result<size_t> File::read_at(uint64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, fmt::format("pread({}, offset {})", path_, offset + done));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status File::write_at(uint64_t offset, std::span<const iovec> iov_in) const {
  // At most 8 pieces: the WAL writes a header and a payload, or a single buffer.
  iovec iov[8];
  if (iov_in.size() > 8) {
    return Error(
        Errc::invalid_argument,
        fmt::format("File::write_at: {} buffers given, at most 8 supported", iov_in.size()));
  }
  size_t cnt = iov_in.size();
  for (size_t i = 0; i < cnt; ++i) iov[i] = iov_in[i];
  iovec* cur = iov;
  while (cnt > 0) {
    ssize_t n = ::pwritev(fd_, cur, static_cast<int>(cnt), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, fmt::format("pwritev({}, offset {})", path_, offset));
    offset += static_cast<uint64_t>(n);
    detail::advance_iov(cur, cnt, static_cast<size_t>(n));
  }
  return ok_status();
}

Status File::write_at(uint64_t offset, std::span<const uint8_t> bytes) const {
  iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  return write_at(offset, std::span<const iovec>(&v, 1));
}

Status File::sync_data() const {
  if (::fdatasync(fd_) != 0)
    return errno_error(errno, fmt::format("fdatasync({}): the log can no longer promise "
                                          "durability; check the disk and reopen the log",
                                          path_));
  return ok_status();
}

Status File::sync() const {
  if (::fsync(fd_) != 0) return errno_error(errno, fmt::format("fsync({})", path_));
  return ok_status();
}

Status File::truncate(uint64_t size) const {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    return errno_error(errno, fmt::format("ftruncate({}, {})", path_, size));
  return ok_status();
}

Status File::preallocate(uint64_t size) const {
  if (::fallocate(fd_, 0, 0, static_cast<off_t>(size)) == 0) return ok_status();
  if (errno != EOPNOTSUPP && errno != ENOSYS)
    return errno_error(errno, fmt::format("fallocate({}, {} bytes): free disk space or lower "
                                          "the segment size",
                                          path_, size));
  // File systems without fallocate: glibc's emulation writes the blocks.
  int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(size));
  if (rc != 0) return errno_error(rc, fmt::format("posix_fallocate({}, {} bytes)", path_, size));
  return ok_status();
}

Status File::close() {
  if (fd_ < 0) return ok_status();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return errno_error(errno, fmt::format("close({})", path_));
  return ok_status();
}

Status sync_dir(const std::string& dir) {
  auto f = File::open(dir, O_RDONLY | O_DIRECTORY);
  if (!f) return std::move(f).error();
  return f->sync();
}

Status make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return ok_status();
  return errno_error(errno, fmt::format("mkdir({}): create the parent directory or pick a "
                                        "writable path",
                                        dir));
}

Result<std::vector<std::string>> list_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return errno_error(errno, fmt::format("opendir({})", dir));
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(d);
  return names;
}

Status remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return errno_error(errno, fmt::format("unlink({})", path));
  return ok_status();
}

Status rename_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return errno_error(errno, fmt::format("rename({} -> {})", from, to));
  return ok_status();
}

Result<std::vector<uint8_t>> read_whole_file(const std::string& path) {
  auto f = File::open(path, O_RDONLY);
  if (!f) return std::move(f).error();
  auto sz = f->size();
  if (!sz) return std::move(sz).error();
  std::vector<uint8_t> buf(*sz);
  auto n = f->read_at(0, buf);
  if (!n) return std::move(n).error();
  buf.resize(*n);
  return buf;
}

}  // namespace rdmarepl::wal
