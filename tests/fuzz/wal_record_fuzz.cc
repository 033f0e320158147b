// Fuzzes the WAL record decoder: any bytes as a batch payload. Decoding must never crash or
// read outside the input, and every record it accepts must re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmarepl/wal/record.h"

using namespace rdmarepl::wal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  RecordReader rr(in);
  RecordView r;
  size_t start = 0;
  std::vector<uint8_t> again;
  while (rr.next(&r)) {
    const size_t n = rr.offset() - start;
    again.assign(n, 0);
    if (encode_record(r, again) != n || std::memcmp(again.data(), data + start, n) != 0)
      std::abort();
    start = rr.offset();
  }
  if (rr.offset() > size) std::abort();
  return 0;
}
