// LargeBuffer: a move-only handle to a run of contiguous largest-class chunks of one arena of
// a SlabPool, for buffers above kMaxClassSize (a retained window, a receive ring, a
// large-record buffer). Taken on the control plane (SlabPool::alloc_large(), never from a
// thread cache); given back, chunk by chunk, as ordinary largest-class chunks when destroyed
// or reset. Include "rdmarepl/memory/slab_pool.h" to use it (the release path is defined
// there).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmarepl/memory/size_classes.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::memory {

class SlabPool;
namespace detail {
struct ArenaState;
}

// The number of largest-class chunks a LargeBuffer of `bytes` takes.
constexpr size_t large_chunks(size_t bytes) noexcept {
  return (bytes + kMaxClassSize - 1) / kMaxClassSize;
}

// Every LargeBuffer must be destroyed (or reset) before the pool it came from.
class LargeBuffer {
 public:
  LargeBuffer() noexcept = default;
  LargeBuffer(LargeBuffer&& other) noexcept
      : data_(other.data_), pool_(other.pool_), arena_(other.arena_), size_(other.size_) {
    other.data_ = nullptr;
  }
  LargeBuffer& operator=(LargeBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = other.data_;
      pool_ = other.pool_;
      arena_ = other.arena_;
      size_ = other.size_;
      other.data_ = nullptr;
    }
    return *this;
  }
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;
  ~LargeBuffer() { reset(); }

  // Returns the chunks to their pool; the handle becomes empty.
  inline void reset() noexcept;

  [[nodiscard]] explicit operator bool() const noexcept { return data_ != nullptr; }
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  // The size asked for; the run ends at the next multiple of kMaxClassSize.
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] size_t capacity() const noexcept { return large_chunks(size_) * kMaxClassSize; }
  [[nodiscard]] inline transport::MemoryKeys keys() const noexcept;

 private:
  friend class SlabPool;
  LargeBuffer(std::byte* data, SlabPool* pool, detail::ArenaState* arena, size_t size) noexcept
      : data_(data), pool_(pool), arena_(arena), size_(size) {}

  std::byte* data_ = nullptr;
  SlabPool* pool_ = nullptr;
  detail::ArenaState* arena_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rdmarepl::memory
