#include "rdmarepl/wal/segment_reader.h"

#include <algorithm>

namespace rdmarepl::wal {

namespace {
bool all_zero(const uint8_t* p, size_t n) noexcept {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}
}  // namespace

uint64_t SegmentReader::damaged_bytes() const noexcept {
  const uint64_t floor = done_ == Step::damaged ? 1 : 0;
  if (off_ >= in_.size()) return floor;
  size_t last = in_.size();
  while (last > off_ && in_[last - 1] == 0) --last;
  return std::max<uint64_t>(last - off_, floor);
}

SegmentReader::Step SegmentReader::next(Frame* out) noexcept {
  if (done_ != Step::frame) return done_;
  if (!started_) {
    started_ = true;
    if (in_.size() < kSegmentHeaderSize ||
        decode_segment_header(in_.data(), &header_) != HeaderCheck::ok ||
        header_.segment_number != number_)
      return fail(DamageReason::bad_segment_header);
    off_ = kSegmentHeaderSize;
  }
  const size_t left = in_.size() - off_;
  const uint8_t* p = in_.data() + off_;
  if (left < kFrameHeaderSize) {
    if (all_zero(p, left)) return done_ = Step::end_of_data;
    return fail(DamageReason::torn_header);
  }
  if (all_zero(p, kFrameHeaderSize)) {
    if (all_zero(p, left)) return done_ = Step::end_of_data;
    return fail(DamageReason::garbage_after_end);
  }
  const FrameHeader h = FrameHeader::decode(p);
  if (h.length > kMaxFramePayload || h.length > left - kFrameHeaderSize)
    return fail(DamageReason::bad_length);
  if (!frame_crc_ok(p, h.length)) return fail(DamageReason::bad_checksum);
  if (h.type == FrameType::end) {
    if (h.length != 0) return fail(DamageReason::bad_type);
    off_ += kFrameHeaderSize;
    return done_ = Step::end_frame;
  }
  if (h.type != FrameType::batch) return fail(DamageReason::bad_type);
  if (h.first_seq > h.last_seq) return fail(DamageReason::bad_seq);
  out->segment = number_;
  out->offset = off_;
  out->first_seq = h.first_seq;
  out->last_seq = h.last_seq;
  out->record_count = h.record_count;
  out->payload = in_.subspan(off_ + kFrameHeaderSize, h.length);
  off_ += kFrameHeaderSize + h.length;
  min_seq_ = frames_ == 0 ? h.first_seq : std::min(min_seq_, h.first_seq);
  max_seq_ = frames_ == 0 ? h.last_seq : std::max(max_seq_, h.last_seq);
  ++frames_;
  return Step::frame;
}

}  // namespace rdmarepl::wal
