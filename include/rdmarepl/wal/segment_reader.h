// Parses the frames of one segment held in memory. Pure and bounds-checked: the fuzz
// target drives it with arbitrary bytes. LogReader (reader.h) strings segments together.
#pragma once

#include <cstdint>
#include <span>

#include "rdmarepl/wal/format.h"
#include "rdmarepl/wal/reporter.h"

namespace rdmarepl::wal {

// One batch frame. `payload` points into the reader's buffer and stays valid until the
// reader's next call; it holds exactly the bytes given to Writer::append.
struct Frame {
  uint64_t segment = 0;
  uint64_t offset = 0;  // of the frame header in the segment file
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  uint32_t record_count = 0;
  std::span<const uint8_t> payload;
};

class SegmentReader {
 public:
  enum class Step : uint8_t {
    frame,        // *out holds the next batch frame
    end_frame,    // the segment's end frame: the log continues in the next segment
    end_of_data,  // zero bytes (preallocated space) or end of file at a frame boundary
    damaged,      // see damage_reason(); valid_end() is where the damage starts
  };

  // `bytes` is the whole segment file; its header must name `segment_number`.
  SegmentReader(std::span<const uint8_t> bytes, uint64_t segment_number) noexcept
      : in_(bytes), number_(segment_number) {}

  // After end_frame, end_of_data or damaged, every further call returns the same step.
  Step next(Frame* out) noexcept;

  [[nodiscard]] const SegmentHeader& header() const noexcept { return header_; }
  // End of the valid prefix: the offset of the next frame, or of the damage.
  [[nodiscard]] uint64_t valid_end() const noexcept { return off_; }
  [[nodiscard]] DamageReason damage_reason() const noexcept { return reason_; }
  // Bytes from valid_end() to the last non-zero byte of the file (at least 1 when damaged).
  [[nodiscard]] uint64_t damaged_bytes() const noexcept;
  // Over the batches returned so far: lowest first_seq, highest last_seq, frame count.
  [[nodiscard]] uint64_t min_seq() const noexcept { return min_seq_; }
  [[nodiscard]] uint64_t max_seq() const noexcept { return max_seq_; }
  [[nodiscard]] uint32_t frames() const noexcept { return frames_; }

 private:
  Step fail(DamageReason r) noexcept {
    reason_ = r;
    done_ = Step::damaged;
    return done_;
  }

  std::span<const uint8_t> in_;
  uint64_t number_;
  SegmentHeader header_;
  uint64_t off_ = 0;
  uint64_t min_seq_ = 0;
  uint64_t max_seq_ = 0;
  uint32_t frames_ = 0;
  bool started_ = false;
  Step done_ = Step::frame;  // frame means "not finished"
  DamageReason reason_ = DamageReason::bad_checksum;
};

}  // namespace rdmarepl::wal
