// What a store's group hook receives: the records of one write group (replicate_group() on
// the leader), in seq order, all of one shard. The records are decoded in place from a batch;
// like a Record's views they are valid only during the Store::apply_group call.
//
//   void apply_group(const rdmarepl::RecordGroup& group) {
//     rocksdb::WriteBatch wb;
//     for (const rdmarepl::Record& r : group) ...;  // r.seq from group.first_seq() up
//     db->Write(opts, &wb);                          // all or nothing
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/record.h"

namespace rdmarepl::replication {

class RecordGroup {
 public:
  // Walks the group's records; each Record is valid until the iterator moves.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Record;
    using difference_type = std::ptrdiff_t;
    using pointer = const Record*;
    using reference = const Record&;

    iterator() noexcept : cursor_(nullptr, nullptr, 0) {}
    iterator(const std::byte* begin, const std::byte* end, uint16_t shard) noexcept
        : cursor_(begin, end, shard) {
      done_ = !cursor_.next(rec_);
    }
    reference operator*() const noexcept { return rec_; }
    pointer operator->() const noexcept { return &rec_; }
    iterator& operator++() noexcept {
      done_ = !cursor_.next(rec_);
      return *this;
    }
    void operator++(int) noexcept { ++*this; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept {
      return a.done_ == b.done_ && (a.done_ || a.rec_.seq == b.rec_.seq);
    }

   private:
    RecordCursor cursor_;
    Record rec_;
    bool done_ = true;
  };

  // The records in [begin, end) of a checked batch of `shard`: `count` records from seq
  // `first_seq`. Built by the channel.
  RecordGroup(const std::byte* begin, const std::byte* end, uint16_t shard, uint32_t count,
              uint64_t first_seq) noexcept
      : begin_(begin), end_(end), shard_(shard), count_(count), first_seq_(first_seq) {}

  [[nodiscard]] iterator begin() const noexcept { return iterator(begin_, end_, shard_); }
  [[nodiscard]] iterator end() const noexcept { return iterator(); }
  [[nodiscard]] uint32_t size() const noexcept { return count_; }
  [[nodiscard]] uint32_t shard() const noexcept { return shard_; }
  [[nodiscard]] uint64_t first_seq() const noexcept { return first_seq_; }
  // The seq of the group's last record: what the store records as its durable position
  // when it applies the group in one atomic write.
  [[nodiscard]] uint64_t last_seq() const noexcept { return first_seq_ + count_ - 1; }

 private:
  const std::byte* begin_;
  const std::byte* end_;
  uint16_t shard_;
  uint32_t count_;
  uint64_t first_seq_;
};

}  // namespace rdmarepl::replication
