// Fuzzes the WAL frame reader: any bytes as a segment file. The reader must never crash,
// never read outside the input, and stay consistent: frames lie inside the input, in
// order, and the valid prefix ends where the first bad byte begins.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/wal/record.h"
#include "rdmarepl/wal/segment_reader.h"

using namespace rdmarepl::wal;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

// Random bytes almost never carry valid CRCs, which would keep the fuzzer at the first
// check. For half of the inputs (first byte odd) the rest is repaired as the writer would
// have written it: segment header CRC, record CRCs inside each frame, frame CRCs. Damage
// the repair cannot reach (lengths, types, seqs, truncation) is left for the reader.
std::vector<uint8_t> with_valid_crcs(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  if (b.size() < kSegmentHeaderSize) return b;
  rdmarepl::store_be32(&b[28], rdmarepl::crc32c::mask(rdmarepl::crc32c::value(b.data(), 28)));
  size_t off = kSegmentHeaderSize;
  while (b.size() - off >= kFrameHeaderSize) {
    const uint32_t len = rdmarepl::load_be32(&b[off + 4]);
    if (len > b.size() - off - kFrameHeaderSize) break;
    for (size_t r = off + kFrameHeaderSize, end = r + len; end - r >= kRecordHeaderSize;) {
      const size_t k = rdmarepl::load_be16(&b[r + 18]);
      const size_t v = rdmarepl::load_be32(&b[r + 20]);
      if (v > end - r - kRecordHeaderSize || k > end - r - kRecordHeaderSize - v) break;
      uint32_t crc = rdmarepl::crc32c::extend(0, &b[r], 24);
      crc = rdmarepl::crc32c::extend(crc, &b[r + kRecordHeaderSize], k + v);
      rdmarepl::store_be32(&b[r + 24], rdmarepl::crc32c::mask(crc));
      r += kRecordHeaderSize + k + v;
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
    // Touch every payload byte (ASan checks the bounds) and walk it as records.
    (void)rdmarepl::crc32c::value(f.payload.data(), f.payload.size());
    RecordReader rr(f.payload);
    RecordView rec;
    while (rr.next(&rec)) check(rec.key.size() + rec.value.size() <= f.payload.size());
  }
  check(r.valid_end() <= size);
  check(r.next(&f) == step);  // finished readers stay finished
  if (step == SegmentReader::Step::damaged) {
    check(r.damaged_bytes() >= 1);
    check(r.valid_end() + r.damaged_bytes() <= size || r.valid_end() >= size);
  }
  return 0;
}
