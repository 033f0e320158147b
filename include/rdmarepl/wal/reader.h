// Reads the frames of a WAL directory in order, across segments, and recovers the valid
// prefix. Recovery semantics (docs/wal_format.md, "Recovery"):
//   - damage in the last segment is a torn tail: the frames before it are the log, the rest
//     is reported with at_tail = true (the writer truncates there and continues);
//   - damage in any earlier segment (or a missing segment) stops the log at the valid
//     prefix; the rest, including every later segment, is reported with at_tail = false.
// The reader never crashes on bad bytes and never reads outside what it loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/wal/reporter.h"
#include "rdmarepl/wal/segment_reader.h"

namespace rdmarepl::wal {

// Where reading stopped, for the writer that reopens the log.
struct ReadEnd {
  bool any_segment = false;   // false: the directory holds no segment
  uint64_t last_segment = 0;  // highest segment number found
  // Segment holding the end of the valid prefix, and the offset there.
  uint64_t end_segment = 0;
  uint64_t end_offset = 0;
  bool end_header_valid = false;  // end_segment's header is intact
  bool sealed = false;            // the valid prefix ends with an end frame
  // Batches of end_segment inside the valid prefix: lowest/highest seq and count, what
  // its end frame must carry when recovery seals it.
  uint64_t end_min_seq = 0;
  uint64_t end_max_seq = 0;
  uint32_t end_frames = 0;
  bool damaged = false;          // something was reported
  bool damaged_mid_log = false;  // ... and it was not a torn tail of the last segment
  bool any_frame = false;
  uint64_t max_seq = 0;  // highest last_seq of all valid batches
  uint64_t bytes_dropped = 0;
};

class LogReader {
 public:
  // Lists the segments of `dir`. `reporter` may be null (damage is then only counted).
  // Segments numbered below `from_segment` are left out: reading starts at the first one
  // at or after it (a reader for catching up from a known point, not for recovery).
  static Result<LogReader> open(const std::string& dir, Reporter* reporter,
                                uint64_t from_segment = 0);

  // The next valid batch frame: true with *out set, false at the end of the valid prefix
  // (see end()). An error only for I/O failures, never for damaged bytes.
  Result<bool> next(Frame* out);

  [[nodiscard]] const ReadEnd& end() const noexcept { return end_; }
  [[nodiscard]] const std::vector<uint64_t>& segments() const noexcept { return segments_; }

 private:
  LogReader(std::string dir, Reporter* reporter, std::vector<uint64_t> segments);
  Status load(size_t index);
  void report(uint64_t segment, uint64_t offset, uint64_t bytes, DamageReason r, bool tail);
  void drop_later_segments(size_t from_index);

  std::string dir_;
  Reporter* reporter_;
  std::vector<uint64_t> segments_;
  size_t index_ = 0;
  bool loaded_ = false;
  bool finished_ = false;
  std::string path_;
  std::vector<uint8_t> buf_;
  SegmentReader seg_{{}, 0};
  ReadEnd end_;
};

}  // namespace rdmarepl::wal
