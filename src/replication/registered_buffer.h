// A registered buffer of the replication engine (the leader's retained windows and ack
// targets, the follower's rings and large-record buffers): a memory::Arena (mmap'd, huge
// pages when the system has them, registered once) plus the registrar it was registered
// through. Move-only; deregisters, then unmaps.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/memory/arena.h"
#include "rdmarepl/memory/counters.h"
#include "rdmarepl/memory/registrar.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

class RegisteredBuffer {
 public:
  // Control plane: map + register. The error says which buffer and how big. `transport`
  // must outlive the buffer.
  // `counters` (may be null) counts the registration and must outlive the buffer.
  static Result<RegisteredBuffer> create(transport::Transport& transport, size_t bytes,
                                         transport::Access access, std::string_view what,
                                         memory::Counters* counters = nullptr);

  RegisteredBuffer() = default;
  RegisteredBuffer(RegisteredBuffer&&) noexcept = default;
  // The old arena is released (through the old registrar) before the registrar is replaced.
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept {
    if (this != &other) {
      arena_ = std::move(other.arena_);
      registrar_ = std::move(other.registrar_);
      size_ = other.size_;
    }
    return *this;
  }

  [[nodiscard]] std::byte* data() const noexcept { return arena_.base(); }
  // The size asked for; the mapping may be larger (rounded up to its page size).
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] uint32_t lkey() const noexcept { return arena_.region().keys.lkey; }
  [[nodiscard]] transport::RemoteRegion remote() const noexcept {
    return transport::RemoteRegion{reinterpret_cast<uint64_t>(arena_.base()),
                                   static_cast<uint32_t>(size_), arena_.region().keys.rkey};
  }

 private:
  // The arena keeps a pointer to the registrar: declared first, destroyed last.
  std::unique_ptr<memory::Registrar> registrar_;
  memory::Arena arena_;
  size_t size_ = 0;
};

}  // namespace rdmarepl::replication::detail
