#include "log_rewind.h"

#include <fmt/format.h>

#include <span>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/log.h"
#include "rdmarepl/wal/reader.h"

namespace rdmarepl::failover::detail {

Result<bool> rewind_log(const std::string& wal_dir, uint64_t keep_seq) {
  auto reader = wal::LogReader::open(wal_dir, nullptr);
  if (!reader) return std::move(reader).error();
  // The log's frames are numbered (frame header seqs); the records' seqs are in the batches.
  uint64_t keep_frame = 0;
  wal::Frame f;
  for (;;) {
    auto more = reader->next(&f);
    if (!more) return std::move(more).error();
    if (!*more) return true;  // nothing above keep_seq
    replication::BatchView v;
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(f.payload.data()),
                                           f.payload.size());
    if (replication::parse_batch(bytes, v) != replication::BatchError::ok)
      return Error(Errc::corrupt, fmt::format("{}: frame {} of segment {} is not a valid batch",
                                              wal_dir, f.first_seq, f.segment));
    if (v.header.shard != 0 || v.header.record_count == 0) continue;
    const uint64_t first = v.header.first_seq, last = first + v.header.record_count - 1;
    if (last <= keep_seq) {
      keep_frame = f.last_seq;
      continue;
    }
    if (first <= keep_seq) return false;  // the fork is inside this batch
    break;
  }
  return wal::truncate_after(wal_dir, keep_frame);
}

}  // namespace rdmarepl::failover::detail
