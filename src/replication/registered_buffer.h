// A page-aligned anonymous mapping registered once with a transport: the leader's retained
// windows and ack targets, the follower's rings. Move-only; deregisters, then unmaps.
#pragma once

#include <cstddef>
#include <memory>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

struct Unmap {
  size_t bytes = 0;
  void operator()(std::byte* p) const noexcept;
};

class RegisteredBuffer {
 public:
  // Control plane: mmap + register. The error says which buffer and how big.
  static Result<RegisteredBuffer> create(transport::Transport& transport, size_t bytes,
                                         transport::Access access, std::string_view what);

  RegisteredBuffer() = default;
  RegisteredBuffer(RegisteredBuffer&&) noexcept = default;
  // Releases the old registration before the old mapping.
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept {
    if (this != &other) {
      mr_ = std::move(other.mr_);
      map_ = std::move(other.map_);
      size_ = other.size_;
    }
    return *this;
  }

  [[nodiscard]] std::byte* data() const noexcept { return map_.get(); }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] uint32_t lkey() const noexcept { return mr_->region().keys.lkey; }
  [[nodiscard]] transport::RemoteRegion remote() const noexcept { return mr_->remote(); }

 private:
  // Declared before mr_ so that the registration is released first.
  std::unique_ptr<std::byte, Unmap> map_;
  size_t size_ = 0;
  std::unique_ptr<transport::MemoryRegion> mr_;
};

}  // namespace rdmarepl::replication::detail
