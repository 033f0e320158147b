#include "rdmarepl/wal/reporter.h"

#include <fmt/format.h>

#include "rdmarepl/core/log.h"

namespace rdmarepl::wal {

std::string_view to_string(DamageReason r) noexcept {
  switch (r) {
    case DamageReason::bad_segment_header:
      return "bad segment header";
    case DamageReason::torn_header:
      return "torn frame header";
    case DamageReason::bad_length:
      return "bad frame length";
    case DamageReason::bad_checksum:
      return "frame checksum mismatch";
    case DamageReason::bad_type:
      return "bad frame type";
    case DamageReason::bad_seq:
      return "first_seq above last_seq";
    case DamageReason::missing_end:
      return "segment ends without its end frame";
    case DamageReason::missing_segment:
      return "segment file missing";
    case DamageReason::garbage_after_end:
      return "non-zero bytes after the last frame";
    case DamageReason::after_damage:
      return "segment after a damaged one";
    case DamageReason::bad_checkpoint:
      return "corrupt checkpoint";
  }
  return "unknown";
}

std::string describe(const Damage& d) {
  return fmt::format("{} (segment {}) offset {}: {}, {} bytes dropped ({})", d.file, d.segment,
                     d.offset, to_string(d.reason), d.bytes_dropped,
                     d.at_tail ? "torn tail of the last segment: an interrupted write"
                               : "valid data may be lost: restore it from a replica");
}

void LogReporter::report(const Damage& d) {
  log::warn("wal: {}", describe(d));
}

}  // namespace rdmarepl::wal
