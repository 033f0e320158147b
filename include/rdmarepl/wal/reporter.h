// How the WAL and checkpoint readers tell their owner about damaged bytes they dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmarepl::wal {

enum class DamageReason : uint8_t {
  bad_segment_header,  // magic, version, CRC or segment number of a segment header is wrong
  torn_header,         // fewer than a frame header's bytes remain, and they are not all zero
  bad_length,          // a frame's length exceeds kMaxFramePayload or runs past end of file
  bad_checksum,        // a frame's CRC does not match its bytes
  bad_type,            // a checksummed frame has an unknown type (or an end frame a payload)
  bad_seq,             // a checksummed batch frame has first_seq > last_seq
  missing_end,         // a segment that is not the last stops without its end frame
  missing_segment,     // a segment number between the first and the last has no file
  garbage_after_end,   // non-zero bytes after the last frame (inside preallocated space)
  after_damage,        // a whole later segment, dropped because an earlier one is damaged
  bad_checkpoint,      // a checkpoint file failed its header or payload check
};
std::string_view to_string(DamageReason r) noexcept;

struct Damage {
  std::string_view file;  // path of the damaged file
  uint64_t segment = 0;   // segment number (checkpoints: the seq named by the file)
  uint64_t offset = 0;    // where the dropped bytes start in that file
  uint64_t bytes_dropped = 0;
  DamageReason reason = DamageReason::bad_checksum;
  // True when the damage is the torn tail of the last segment (an interrupted write that
  // was never acknowledged as durable); false when valid data may have been lost.
  bool at_tail = false;
};

// Receives a call for each run of bytes a reader drops. Called on the reading thread.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void report(const Damage& d) = 0;
};

// A reporter that logs each damage at warn level (core/log.h).
class LogReporter final : public Reporter {
 public:
  void report(const Damage& d) override;
};

// "segment 3 offset 4096: bad_checksum, 120 bytes dropped (torn tail)"
std::string describe(const Damage& d);

}  // namespace rdmarepl::wal
