#include "rdmarepl/wal/log.h"

#include <fcntl.h>

#include <algorithm>

#include <fmt/format.h>

#include "rdmarepl/wal/layout.h"

namespace rdmarepl::wal {

namespace {

LogReporter g_log_reporter;

// Removes checkpoints that were being written when the process stopped.
Status remove_temporaries(const std::string& dir) {
  auto names = list_dir(dir);
  if (!names) return std::move(names).error();
  for (const auto& n : *names) {
    if (n.starts_with("checkpoint-") && n.ends_with(".ckpt.tmp"))
      RDMAREPL_TRY(remove_file(join_path(dir, n)));
  }
  return ok_status();
}

// Closes the valid prefix found by recovery so the writer can start the next segment.
// Returns the number of the segment the writer creates.
Result<uint64_t> seal_recovered(const std::string& dir, const ReadEnd& end,
                                const std::vector<uint64_t>& segments) {
  if (!end.any_segment) return uint64_t{1};
  for (uint64_t n : segments) {
    if (n <= end.end_segment) continue;
    const std::string path = join_path(dir, segment_file_name(n));
    RDMAREPL_TRY(rename_file(path, path + ".damaged"));
  }
  const std::string path = join_path(dir, segment_file_name(end.end_segment));
  uint64_t next = end.end_segment + 1;
  if (!end.end_header_valid) {
    RDMAREPL_TRY(remove_file(path));  // nothing valid in it: recreate it with that number
    next = end.end_segment;
  } else if (!end.sealed) {
    auto f = File::open(path, O_RDWR);
    if (!f) return std::move(f).error();
    RDMAREPL_TRY(
        seal_segment(*f, end.end_offset, end.end_min_seq, end.end_max_seq, end.end_frames));
  }
  RDMAREPL_TRY(sync_dir(dir));
  return next;
}

}  // namespace

Result<bool> truncate_after(const std::string& dir, uint64_t keep_seq) {
  auto names = list_dir(dir);
  if (!names) return std::move(names).error();
  std::vector<std::string> doomed_checkpoints;
  for (const auto& n : *names) {
    uint64_t seq = 0;
    if (parse_checkpoint_file_name(n, &seq) && seq > keep_seq) doomed_checkpoints.push_back(n);
  }
  auto reader = LogReader::open(dir, nullptr);
  if (!reader) return std::move(reader).error();
  Frame f;
  bool cut = false, first = true;
  for (;;) {
    auto more = reader->next(&f);
    if (!more) return std::move(more).error();
    if (!*more) break;
    // With every frame at or below keep_seq gone to a checkpoint above it, the prefix would
    // survive only in that checkpoint, which goes too.
    if (first && !doomed_checkpoints.empty() && f.first_seq > 1) return false;
    first = false;
    if (f.last_seq <= keep_seq) continue;
    if (f.first_seq != keep_seq + 1) return false;  // the fork is inside this frame
    cut = true;
    break;
  }
  if (!cut && !doomed_checkpoints.empty()) return false;
  if (cut) {
    auto file = File::open(join_path(dir, segment_file_name(f.segment)), O_RDWR);
    if (!file) return std::move(file).error();
    RDMAREPL_TRY(file->truncate(f.offset));
    RDMAREPL_TRY(file->sync());
    for (uint64_t n : reader->segments())
      if (n > f.segment) RDMAREPL_TRY(remove_file(join_path(dir, segment_file_name(n))));
  }
  for (const auto& n : doomed_checkpoints) RDMAREPL_TRY(remove_file(join_path(dir, n)));
  RDMAREPL_TRY(sync_dir(dir));
  return true;
}

Result<std::unique_ptr<Log>> Log::open(const std::string& dir, LogOptions options,
                                       RecoveryHandler& handler) {
  RDMAREPL_TRY(make_dir(dir));
  RDMAREPL_TRY(remove_temporaries(dir));
  Reporter* reporter = options.reporter != nullptr ? options.reporter : &g_log_reporter;
  std::unique_ptr<Log> log(new Log(dir, options));
  RecoveryInfo& info = log->recovery_;

  auto ckpt = load_newest_checkpoint(dir, reporter);
  if (!ckpt) return std::move(ckpt).error();
  if (ckpt->has_value()) {
    info.had_checkpoint = true;
    info.checkpoint_seq = (*ckpt)->seq();
    info.last_seq = info.checkpoint_seq;
    RDMAREPL_TRY(handler.restore(**ckpt));
  }

  auto reader = LogReader::open(dir, reporter);
  if (!reader) return std::move(reader).error();
  Frame f;
  for (;;) {
    auto more = reader->next(&f);
    if (!more) return std::move(more).error();
    if (!*more) break;
    if (info.had_checkpoint && f.last_seq <= info.checkpoint_seq) {
      ++info.frames_skipped;
      continue;
    }
    RDMAREPL_TRY(handler.replay(f));
    ++info.frames_replayed;
    info.records_replayed += f.record_count;
  }
  info.end = reader->end();
  const ReadEnd& end = info.end;
  if (end.damaged_mid_log && !options.repair) {
    return Error(Errc::corrupt,
                 fmt::format("WAL {} is damaged before its tail (segment {} offset {}; {} bytes "
                             "dropped, see the reported damage): acknowledged writes may be "
                             "lost. Recover this node from a replica, or open with "
                             "LogOptions::repair = true to keep the valid prefix",
                             dir, end.end_segment, end.end_offset, end.bytes_dropped));
  }
  auto next_segment = seal_recovered(dir, end, reader->segments());
  if (!next_segment) return std::move(next_segment).error();

  if (end.any_frame) info.last_seq = std::max(info.last_seq, end.max_seq);
  const uint64_t next_seq = info.last_seq + (end.any_frame || info.had_checkpoint ? 1 : 0);

  auto w = Writer::create(dir, *next_segment, next_seq, options.writer);
  if (!w) return std::move(w).error();
  log->writer_ = std::move(*w);
  return log;
}

Status Log::commit_checkpoint(CheckpointWriter& w) {
  RDMAREPL_TRY(w.commit());
  return remove_obsolete();
}

Status Log::remove_obsolete() {
  auto seqs = list_checkpoints(dir_);
  if (!seqs) return std::move(seqs).error();
  const size_t keep = std::max<size_t>(1, options_.keep_checkpoints);
  if (seqs->empty()) return ok_status();
  while (seqs->size() > keep) {
    RDMAREPL_TRY(remove_file(join_path(dir_, checkpoint_file_name(seqs->front()))));
    seqs->erase(seqs->begin());
  }
  const uint64_t floor = seqs->front();

  auto names = list_dir(dir_);
  if (!names) return std::move(names).error();
  std::vector<uint64_t> segments;
  for (const auto& n : *names) {
    uint64_t number = 0;
    if (parse_segment_file_name(n, &number)) segments.push_back(number);
  }
  std::sort(segments.begin(), segments.end());
  const uint64_t current = writer_->current_segment();
  // A sealed segment ends with its end frame, which names the highest seq inside; it is
  // wholly covered when that seq is at or below the oldest kept checkpoint. Only a prefix
  // of the segments is deleted: a gap would read as a missing segment.
  for (uint64_t n : segments) {
    if (n >= current) break;
    const std::string path = join_path(dir_, segment_file_name(n));
    auto f = File::open(path, O_RDONLY);
    if (!f) return std::move(f).error();
    auto size = f->size();
    if (!size) return std::move(size).error();
    if (*size < kSegmentHeaderSize + kFrameHeaderSize) break;
    uint8_t end[kFrameHeaderSize];
    auto got = f->read_at(*size - kFrameHeaderSize, end);
    if (!got) return std::move(got).error();
    const FrameHeader h = FrameHeader::decode(end);
    if (*got != kFrameHeaderSize || !frame_crc_ok(end, 0) || h.type != FrameType::end ||
        h.length != 0 || (h.record_count > 0 && h.last_seq > floor))
      break;
    RDMAREPL_TRY(remove_file(path));
  }
  return sync_dir(dir_);
}

}  // namespace rdmarepl::wal
