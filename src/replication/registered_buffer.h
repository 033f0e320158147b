// A registered buffer of the replication engine (the leader's retained windows, catch-up
// staging buffers and ack targets, the follower's rings and large-record buffers, the tag
// slots of authenticated writes): memory taken from the channel's slab pools at create()
// (channel_memory.h), a size-class chunk up to memory::kMaxClassSize and a run of
// largest-class chunks above it. Move-only; gives the memory back to its pool when
// destroyed. Nothing here registers: the pools' arenas were registered once, up front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "rdmarepl/memory/slab_pool.h"
#include "rdmarepl/transport/transport.h"

namespace rdmarepl::replication::detail {

class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  explicit RegisteredBuffer(memory::Buffer chunk) noexcept
      : data_(chunk.data()), size_(chunk.size()), keys_(chunk.keys()), chunk_(std::move(chunk)) {}
  explicit RegisteredBuffer(memory::LargeBuffer run) noexcept
      : data_(run.data()), size_(run.size()), keys_(run.keys()), run_(std::move(run)) {}

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  // The size asked for; the chunk or run may be larger.
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] uint32_t lkey() const noexcept { return keys_.lkey; }
  [[nodiscard]] transport::RemoteRegion remote() const noexcept {
    return transport::RemoteRegion{reinterpret_cast<uint64_t>(data_), static_cast<uint32_t>(size_),
                                   keys_.rkey};
  }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  transport::MemoryKeys keys_{};
  // One of the two holds the memory.
  memory::Buffer chunk_;
  memory::LargeBuffer run_;
};

}  // namespace rdmarepl::replication::detail
