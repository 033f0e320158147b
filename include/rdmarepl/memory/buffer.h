// Buffer: a move-only handle to one chunk of a SlabPool. It carries the chunk's address,
// size and keys, and gives the chunk back to its pool when destroyed or reset. Include
// "rdmarepl/memory/slab_pool.h" to use it (the release path is defined there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "rdmarepl/memory/size_classes.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::memory {

class SlabPool;
namespace detail {
struct ArenaState;
}

// Every Buffer must be destroyed (or reset) before the pool it came from.
class Buffer {
 public:
  Buffer() noexcept = default;
  Buffer(Buffer&& other) noexcept
      : data_(other.data_),
        pool_(other.pool_),
        arena_(other.arena_),
        size_(other.size_),
        cls_(other.cls_) {
    other.data_ = nullptr;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = other.data_;
      pool_ = other.pool_;
      arena_ = other.arena_;
      size_ = other.size_;
      cls_ = other.cls_;
      other.data_ = nullptr;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  // Returns the chunk to its pool; the handle becomes empty.
  inline void reset() noexcept;

  [[nodiscard]] explicit operator bool() const noexcept { return data_ != nullptr; }
  [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  // The size asked for.
  [[nodiscard]] size_t size() const noexcept { return size_; }
  // The chunk's size (its size class); bytes past size() up to here are usable too.
  [[nodiscard]] size_t capacity() const noexcept { return class_size(cls_); }
  [[nodiscard]] unsigned size_class() const noexcept { return cls_; }
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
  // The keys of the arena the chunk lies in (zero for an unregistered pool). Read through the
  // arena rather than copied at allocation, which keeps alloc() to two loads.
  [[nodiscard]] inline transport::MemoryKeys keys() const noexcept;
  [[nodiscard]] uint32_t lkey() const noexcept { return keys().lkey; }
  [[nodiscard]] uint32_t rkey() const noexcept { return keys().rkey; }
  // What a peer needs to access this buffer (only meaningful if the pool grants remote access).
  [[nodiscard]] transport::RemoteRegion remote() const noexcept {
    return {reinterpret_cast<uint64_t>(data_), static_cast<uint32_t>(size_), rkey()};
  }

 private:
  friend class SlabPool;
  Buffer(std::byte* data, SlabPool* pool, detail::ArenaState* arena, uint32_t size,
         uint8_t cls) noexcept
      : data_(data), pool_(pool), arena_(arena), size_(size), cls_(cls) {}

  std::byte* data_ = nullptr;
  SlabPool* pool_ = nullptr;
  detail::ArenaState* arena_ = nullptr;
  uint32_t size_ = 0;
  uint8_t cls_ = 0;
};

}  // namespace rdmarepl::memory
