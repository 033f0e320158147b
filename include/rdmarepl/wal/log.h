// A WAL directory as one object: open() recovers (newest valid checkpoint, then the frames
// after it), seals what it found, and hands back a Writer that appends after it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rdmarepl/core/result.h"
#include "rdmarepl/wal/checkpoint.h"
#include "rdmarepl/wal/reader.h"
#include "rdmarepl/wal/reporter.h"
#include "rdmarepl/wal/writer.h"

namespace rdmarepl::wal {

// What recovery feeds the store with.
class RecoveryHandler {
 public:
  virtual ~RecoveryHandler() = default;
  // Called at most once, before any replay(), with the newest checkpoint that verifies.
  virtual Status restore(CheckpointReader& checkpoint) = 0;
  // Called for each batch frame whose last_seq is above the checkpoint's seq, in log order.
  // A frame with first_seq <= that seq straddles the checkpoint: its records with
  // seq <= RecoveryInfo::checkpoint_seq are already in the checkpoint.
  virtual Status replay(const Frame& frame) = 0;
};

struct LogOptions {
  WriterOptions writer;
  // Damage before the torn tail of the last segment may lose acknowledged data. false:
  // open() fails with Errc::corrupt naming what was lost. true: keep the valid prefix,
  // rename the later segments to *.damaged (never read again) and continue after it.
  // A log written with Durability::none or interval can be left like this by a power
  // failure (its unsynced tail may span a rotation): open such logs with repair = true.
  bool repair = false;
  // Checkpoints kept; segments are deleted only when the OLDEST kept checkpoint covers
  // them, so a corrupt newest checkpoint still has an older one plus the log behind it.
  size_t keep_checkpoints = 2;
  Reporter* reporter = nullptr;  // null: damage is logged (LogReporter)
};

struct RecoveryInfo {
  bool had_checkpoint = false;
  uint64_t checkpoint_seq = 0;
  uint64_t frames_replayed = 0;
  uint64_t frames_skipped = 0;  // wholly covered by the checkpoint
  uint64_t records_replayed = 0;
  uint64_t last_seq = 0;  // highest seq recovered (checkpoint or log); 0 when none
  ReadEnd end;            // where the valid prefix ended and what was dropped
};

// Cuts the log of a closed directory back so that it ends at `keep_seq` (in frame-header
// seqs: a channel log's frame numbers, docs/wal_format.md): the first frame whose last_seq
// is above it and everything after it go (that segment is truncated at the frame, later
// segments are removed), and so do checkpoints above it. Reopened, the log recovers exactly
// the frames up to `keep_seq`. False (nothing changed) when that frame also holds seqs at
// or below `keep_seq`, or when a checkpoint above `keep_seq` is all that holds the earlier
// frames. True when the log already ended at or below it.
Result<bool> truncate_after(const std::string& dir, uint64_t keep_seq);

class Log {
 public:
  static Result<std::unique_ptr<Log>> open(const std::string& dir, LogOptions options,
                                           RecoveryHandler& handler);

  Result<Lsn> append(std::span<const uint8_t> batch, uint64_t first_seq, uint64_t last_seq,
                     uint32_t record_count) {
    return writer_->append(batch, first_seq, last_seq, record_count);
  }
  Result<Lsn> append(std::span<const std::byte> batch, uint64_t first_seq, uint64_t last_seq,
                     uint32_t record_count) {
    return writer_->append(batch, first_seq, last_seq, record_count);
  }
  Result<Lsn> append_gather(std::span<const iovec> pieces, uint64_t first_seq, uint64_t last_seq,
                            uint32_t record_count) {
    return writer_->append_gather(pieces, first_seq, last_seq, record_count);
  }
  [[nodiscard]] Writer& writer() noexcept { return *writer_; }
  [[nodiscard]] const RecoveryInfo& recovery() const noexcept { return recovery_; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

  // Starts a checkpoint of the state up to and including `seq`; stream the snapshot into
  // it, then call commit_checkpoint().
  Result<CheckpointWriter> begin_checkpoint(uint64_t seq) {
    return CheckpointWriter::create(dir_, seq);
  }
  // Commits `w` and removes what it makes obsolete (remove_obsolete).
  Status commit_checkpoint(CheckpointWriter& w);
  // Deletes checkpoints beyond keep_checkpoints and the segments wholly covered by the
  // oldest kept checkpoint (never the segment being written).
  Status remove_obsolete();

  Status close() { return writer_->close(); }

 private:
  Log(std::string dir, LogOptions options) : dir_(std::move(dir)), options_(options) {}
  std::string dir_;
  LogOptions options_;
  RecoveryInfo recovery_;
  std::unique_ptr<Writer> writer_;
};

}  // namespace rdmarepl::wal
