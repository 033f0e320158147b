// Fuzzes the WAL frame reader: any bytes as a segment file. The reader must never crash,
// never read outside the input, and stay consistent: frames lie inside the input, in
// order, and the valid prefix ends where the first bad byte begins. Each frame's payload is
// then parsed as what the product logs, a replication batch (docs/wire_format.md), and its
// records walked.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/segment_reader.h"

using namespace rdmarepl::wal;
namespace repl = rdmarepl::replication;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

// Random bytes almost never carry valid CRCs, which would keep the fuzzer at the first
// check. For half of the inputs (first byte odd) the rest is repaired as the writer would
// have written it: segment header CRC, the batch CRC inside each frame (header bytes
// [0, 24) and payload_len bytes of records), frame CRCs. Damage the repair cannot reach
// (lengths, types, seqs, truncation, record fields) is left for the parsers.
std::vector<uint8_t> with_valid_crcs(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  if (b.size() < kSegmentHeaderSize) return b;
  rdmarepl::store_be32(&b[28], rdmarepl::crc32c::mask(rdmarepl::crc32c::value(b.data(), 28)));
  size_t off = kSegmentHeaderSize;
  while (b.size() - off >= kFrameHeaderSize) {
    const uint32_t len = rdmarepl::load_be32(&b[off + 4]);
    if (len > b.size() - off - kFrameHeaderSize) break;
    const size_t batch = off + kFrameHeaderSize;
    if (len >= repl::kBatchHeaderSize) {
      const uint32_t payload_len = rdmarepl::load_be32(&b[batch + 12]);
      if (payload_len <= len - repl::kBatchHeaderSize) {
        uint32_t crc = rdmarepl::crc32c::extend(0, &b[batch], 24);
        crc = rdmarepl::crc32c::extend(crc, &b[batch + repl::kBatchHeaderSize], payload_len);
        rdmarepl::store_be32(&b[batch + 24], rdmarepl::crc32c::mask(crc));
      }
    }
    const uint32_t crc = rdmarepl::crc32c::value(&b[off + 4], kFrameHeaderSize - 4 + len);
    rdmarepl::store_be32(&b[off], rdmarepl::crc32c::mask(crc));
    off += kFrameHeaderSize + len;
  }
  return b;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size == 0) return 0;
  // Either the bytes as they are, or with their checksums repaired; held in an exactly
  // sized heap buffer so that ASan flags any read past the end.
  std::vector<uint8_t> buf = (raw[0] & 1) != 0 ? with_valid_crcs(raw + 1, raw_size - 1)
                                               : std::vector<uint8_t>(raw + 1, raw + raw_size);
  const uint8_t* data = buf.data();
  const size_t size = buf.size();
  // Take the segment number from where the header keeps it, so that inputs with a valid
  // header reach the frame parser.
  const uint64_t number = size >= 16 ? rdmarepl::load_be64(data + 8) : 0;
  SegmentReader r(std::span<const uint8_t>(data, size), number);
  Frame f;
  uint64_t prev_end = kSegmentHeaderSize;
  SegmentReader::Step step;
  while ((step = r.next(&f)) == SegmentReader::Step::frame) {
    check(f.offset == prev_end);
    check(f.payload.data() == data + f.offset + kFrameHeaderSize);
    check(f.offset + kFrameHeaderSize + f.payload.size() <= size);
    check(f.first_seq <= f.last_seq);
    prev_end = f.offset + kFrameHeaderSize + f.payload.size();
    // Touch every payload byte (ASan checks the bounds), then parse it as a batch and walk
    // its records: each lies inside the payload, with consecutive seqs.
    (void)rdmarepl::crc32c::value(f.payload.data(), f.payload.size());
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(f.payload.data()),
                                           f.payload.size());
    repl::BatchView v;
    if (repl::parse_batch(bytes, v) != repl::BatchError::ok) continue;
    check(v.size() <= bytes.size());
    repl::RecordCursor cursor(v);
    repl::Record rec;
    uint32_t n = 0;
    while (cursor.next(rec)) {
      const auto* lo = reinterpret_cast<const char*>(f.payload.data());
      check(rec.key.data() >= lo && rec.value.data() + rec.value.size() <= lo + v.size());
      check(rec.seq == v.header.first_seq + n++);
    }
    check(n == v.header.record_count);
  }
  check(r.valid_end() <= size);
  check(r.next(&f) == step);  // finished readers stay finished
  if (step == SegmentReader::Step::damaged) {
    check(r.damaged_bytes() >= 1);
    check(r.valid_end() + r.damaged_bytes() <= size || r.valid_end() >= size);
  }
  return 0;
}
