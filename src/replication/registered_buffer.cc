#include "registered_buffer.h"

#include <sys/mman.h>

#include <fmt/format.h>
#include <cerrno>

namespace rdmarepl::replication::detail {

void Unmap::operator()(std::byte* p) const noexcept {
  if (p != nullptr) ::munmap(p, bytes);
}

Result<RegisteredBuffer> RegisteredBuffer::create(transport::Transport& transport, size_t bytes,
                                                  transport::Access access, std::string_view what) {
  constexpr size_t kPage = 4096;
  const size_t mapped = (bytes + kPage - 1) / kPage * kPage;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return errno_error(errno, fmt::format("mapping {} bytes for the {}", mapped, what));
  RegisteredBuffer b;
  b.map_ = std::unique_ptr<std::byte, Unmap>(static_cast<std::byte*>(p), Unmap{mapped});
  b.size_ = bytes;
  auto mr = transport.register_memory(p, bytes, access);
  if (!mr.ok())
    return Error(mr.error().code(), fmt::format("registering the {} ({} bytes): {}", what, bytes,
                                                mr.error().message()));
  b.mr_ = std::move(mr).value();
  return b;
}

}  // namespace rdmarepl::replication::detail
