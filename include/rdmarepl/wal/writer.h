// Appends framed batches to preallocated segment files, rotating at a size, with group
// commit: many threads append; one fdatasync covers every append written before it
// started, and each appender that needs durability waits for the sync that covers it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/wal/file.h"
#include "rdmarepl/wal/format.h"
#include "rdmarepl/wal/writer_options.h"

namespace rdmarepl::wal {

namespace detail {
class Uring;
class PmemMapping;
}  // namespace detail

// A ticket for one append: the end of its frame in this writer's byte stream. Tickets
// increase with append order; durable_lsn() >= t means the frame of ticket t (and every
// frame before it) is on stable storage. Tickets start at 0 for each Writer.
using Lsn = uint64_t;

struct WriterStats {
  uint64_t appends = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;  // frame bytes written (headers included)
  uint64_t syncs = 0;  // fdatasync calls made for group commit (rotations excluded)
  uint64_t rotations = 0;
};

class Writer {
 public:
  // Creates segment `segment_number` in `dir` (which must exist) and appends from there.
  // `next_seq` (the highest seq already in the log + 1) goes into the segment header.
  static Result<std::unique_ptr<Writer>> create(std::string dir, uint64_t segment_number,
                                                uint64_t next_seq, WriterOptions options);
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  // Closes: stops the flusher and syncs what was written (errors are logged).
  ~Writer();

  // Frames `batch` (an already-encoded batch; its bytes are written as they are) and
  // appends it. Requires first_seq <= last_seq and batch.size() <= kMaxFramePayload.
  // Batches may come in any seq order (several shards share one log); the log keeps
  // append order. With Durability::batch it returns once the frame is durable.
  // Thread-safe.
  Result<Lsn> append(std::span<const uint8_t> batch, uint64_t first_seq, uint64_t last_seq,
                     uint32_t record_count);
  // The same for a batch held as std::byte (replication's registered buffers).
  Result<Lsn> append(std::span<const std::byte> batch, uint64_t first_seq, uint64_t last_seq,
                     uint32_t record_count) {
    return append(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(batch.data()), batch.size()),
        first_seq, last_seq, record_count);
  }

  // Gathered: the frame's payload is `pieces` back to back (at most kMaxAppendPieces). The
  // frame is the one append() of the concatenation writes; nothing is copied.
  static constexpr size_t kMaxAppendPieces = 4;
  Result<Lsn> append_gather(std::span<const iovec> pieces, uint64_t first_seq, uint64_t last_seq,
                            uint32_t record_count);

  // Returns once every frame up to ticket `lsn` is durable, syncing if no sync in flight
  // covers it. Works under every durability policy. Thread-safe.
  Status wait_durable(Lsn lsn);
  Status sync() { return wait_durable(written_lsn()); }

  [[nodiscard]] Lsn durable_lsn() const noexcept {
    return durable_lsn_.load(std::memory_order_acquire);
  }
  [[nodiscard]] Lsn written_lsn() const noexcept;
  [[nodiscard]] uint64_t current_segment() const noexcept;
  [[nodiscard]] WriterStats stats() const noexcept;
  // The submission path in use: options.submission, or pwrite when io_uring was refused
  // (or the pmem backend is in use, which submits nothing).
  [[nodiscard]] Submission submission() const noexcept {
    return uring_ ? Submission::io_uring : Submission::pwrite;
  }
  // The backend in use: Backend::file or Backend::pmem, never automatic.
  [[nodiscard]] Backend backend() const noexcept { return pmem_ ? Backend::pmem : Backend::file; }

  // Syncs, seals the current segment (end frame, truncated), stops the flusher. Idempotent.
  Status close();

 private:
  Writer(std::string dir, WriterOptions options);
  Status open_segment(uint64_t number, uint64_t first_seq, bool sync);  // mu_ held
  // Maps the new segment `f` when the pmem backend is (or may be) in use; on the first
  // segment decides and logs the backend. Fails when pmem is required but unusable.
  Status map_segment(File& f, const std::string& path);   // mu_ held
  Status rotate(std::unique_lock<std::mutex>& lk);        // mu_ held
  Status seal_current(std::unique_lock<std::mutex>& lk);  // mu_ held
  Status fail(Error e);                                   // mu_ held
  void flusher_loop();

  const std::string dir_;
  const WriterOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // a sync finished, or stop_
  File file_;
  std::unique_ptr<detail::Uring> uring_;  // set when appends go through io_uring
  // Backend::pmem: the mapping of file_ (unmapped when the segment is sealed). pmem_ is set
  // on the first segment, before the writer is shared, and never changes after.
  std::unique_ptr<detail::PmemMapping> map_;
  bool pmem_ = false;
  bool backend_chosen_ = false;
  uint64_t segment_ = 0;
  uint64_t offset_ = 0;    // next write position in file_
  uint64_t next_seq_ = 0;  // highest seq appended + 1: the next segment header's first_seq
  // Batches in the current segment: lowest/highest seq and count, for its end frame.
  uint64_t seg_min_seq_ = 0;
  uint64_t seg_max_seq_ = 0;
  uint32_t seg_frames_ = 0;
  Lsn written_ = 0;
  std::vector<File> unsynced_;  // sealed segments not yet synced (none/interval only)
  bool dir_dirty_ = false;      // a segment was created since the directory was synced
  bool syncing_ = false;        // a group-commit fdatasync is in flight (mu_ released)
  bool closed_ = false;
  bool failed_ = false;  // a write or sync failed: the log refuses further appends
  Error error_;
  WriterStats stats_;
  std::atomic<Lsn> durable_lsn_{0};

  bool stop_ = false;
  std::thread flusher_;
};

// Writes an end frame at `offset` of the segment file `f` (carrying the lowest/highest seq
// and the number of the segment's batches), drops everything after it and, when `sync`,
// fdatasyncs: the segment is complete. Used on rotation and when reopening after recovery.
Status seal_segment(const File& f, uint64_t offset, uint64_t min_seq, uint64_t max_seq,
                    uint32_t frames, bool sync = true);

}  // namespace rdmarepl::wal
