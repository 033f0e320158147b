#include "rdmarepl/wal/reader.h"

#include <fcntl.h>

#include <algorithm>

#include "rdmarepl/wal/file.h"
#include "rdmarepl/wal/layout.h"

namespace rdmarepl::wal {

Result<LogReader> LogReader::open(const std::string& dir, Reporter* reporter,
                                  uint64_t from_segment) {
  auto names = list_dir(dir);
  if (!names) return std::move(names).error();
  std::vector<uint64_t> segments;
  for (const auto& n : *names) {
    uint64_t number = 0;
    if (parse_segment_file_name(n, &number) && number >= from_segment) segments.push_back(number);
  }
  std::sort(segments.begin(), segments.end());
  return LogReader(dir, reporter, std::move(segments));
}

LogReader::LogReader(std::string dir, Reporter* reporter, std::vector<uint64_t> segments)
    : dir_(std::move(dir)), reporter_(reporter), segments_(std::move(segments)) {
  end_.any_segment = !segments_.empty();
  if (end_.any_segment) {
    end_.last_segment = segments_.back();
    end_.end_segment = segments_.front();
  }
}

Status LogReader::load(size_t index) {
  path_ = join_path(dir_, segment_file_name(segments_[index]));
  auto f = File::open(path_, O_RDONLY);
  if (!f) return std::move(f).error();
  auto size = f->size();
  if (!size) return std::move(size).error();
  buf_.resize(*size);
  auto n = f->read_at(0, buf_);
  if (!n) return std::move(n).error();
  buf_.resize(*n);
  return ok_status();
}

void LogReader::report(uint64_t segment, uint64_t offset, uint64_t bytes, DamageReason r,
                       bool tail) {
  end_.damaged = true;
  end_.damaged_mid_log = end_.damaged_mid_log || !tail;
  end_.bytes_dropped += bytes;
  if (reporter_ == nullptr) return;
  Damage d;
  d.file = path_;
  d.segment = segment;
  d.offset = offset;
  d.bytes_dropped = bytes;
  d.reason = r;
  d.at_tail = tail;
  reporter_->report(d);
}

void LogReader::drop_later_segments(size_t from_index) {
  for (size_t i = from_index; i < segments_.size(); ++i) {
    path_ = join_path(dir_, segment_file_name(segments_[i]));
    uint64_t bytes = 0;
    if (auto f = File::open(path_, O_RDONLY)) {
      if (auto s = f->size()) bytes = *s;
    }
    report(segments_[i], 0, bytes, DamageReason::after_damage, false);
  }
}

Result<bool> LogReader::next(Frame* out) {
  while (!finished_) {
    if (!loaded_) {
      if (index_ >= segments_.size()) {
        finished_ = true;
        break;
      }
      if (index_ > 0 && segments_[index_] != segments_[index_ - 1] + 1) {
        path_ = join_path(dir_, segment_file_name(segments_[index_ - 1] + 1));
        report(segments_[index_ - 1] + 1, 0, 0, DamageReason::missing_segment, false);
        drop_later_segments(index_);
        finished_ = true;
        break;
      }
      RDMAREPL_TRY(load(index_));
      seg_ = SegmentReader(buf_, segments_[index_]);
      loaded_ = true;
    }
    const bool last = index_ + 1 == segments_.size();
    const auto step = seg_.next(out);
    if (step == SegmentReader::Step::frame) {
      end_.max_seq = end_.any_frame ? std::max(end_.max_seq, out->last_seq) : out->last_seq;
      end_.any_frame = true;
      return true;
    }
    end_.end_segment = segments_[index_];
    end_.end_offset = seg_.valid_end();
    end_.end_header_valid = seg_.valid_end() >= kSegmentHeaderSize;
    end_.sealed = step == SegmentReader::Step::end_frame;
    end_.end_min_seq = seg_.min_seq();
    end_.end_max_seq = seg_.max_seq();
    end_.end_frames = seg_.frames();
    if (step == SegmentReader::Step::end_frame) {
      ++index_;
      loaded_ = false;
      continue;
    }
    if (step == SegmentReader::Step::end_of_data) {
      if (!last) {
        report(segments_[index_], seg_.valid_end(), 0, DamageReason::missing_end, false);
        drop_later_segments(index_ + 1);
      }
    } else {
      report(segments_[index_], seg_.valid_end(), seg_.damaged_bytes(), seg_.damage_reason(), last);
      if (!last) drop_later_segments(index_ + 1);
    }
    finished_ = true;
  }
  return false;
}

}  // namespace rdmarepl::wal
