// Fuzzes the replication batch decoder (parse_batch + RecordCursor): any bytes as the start
// of a receive ring. Parsing must never crash or read outside the input, and a batch it
// accepts must hold exactly record_count records with consecutive seqs inside its payload
// and re-encode with BatchBuilder to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/replication/detail/batch_format.h"

using namespace rdmarepl::replication;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

// Random bytes almost never carry a valid CRC. For half of the inputs (first byte odd) the
// header CRC is repaired as the encoder would have written it when payload_len fits, so the
// fuzzer reaches the record walk; lengths, ops, seqs and reserved fields stay as fuzzed.
void repair_crc(std::vector<std::byte>& b) {
  if (b.size() < kBatchHeaderSize) return;
  const uint32_t len = rdmarepl::load_be32(b.data() + 12);
  if (len > b.size() - kBatchHeaderSize) return;
  uint32_t crc = rdmarepl::crc32c::extend(0, b.data(), 24);
  crc = rdmarepl::crc32c::extend(crc, b.data() + kBatchHeaderSize, len);
  rdmarepl::store_be32(b.data() + 24, rdmarepl::crc32c::mask(crc));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size == 0) return 0;
  // An exactly sized heap copy so that ASan flags any read past the end.
  std::vector<std::byte> buf(raw_size - 1);
  if (!buf.empty()) std::memcpy(buf.data(), raw + 1, buf.size());
  if ((raw[0] & 1) != 0) repair_crc(buf);

  BatchView view;
  const BatchError e = parse_batch(std::span<const std::byte>(buf.data(), buf.size()), view);
  check(!describe(e).empty());
  if (e != BatchError::ok) return 0;

  check(view.size() <= buf.size());
  check(view.payload == buf.data() + kBatchHeaderSize);
  const std::byte* payload_end = view.payload + view.header.payload_len;

  // Walk the records, then encode them again: an accepted batch has exactly one encoding.
  std::vector<std::byte> again(view.padded_size());
  BatchBuilder b;
  b.start(again.data(), again.size(), view.header.shard, view.header.first_seq);
  RecordCursor cursor(view);
  Record r;
  uint32_t n = 0;
  while (cursor.next(r)) {
    check(n < view.header.record_count);
    check(r.seq == view.header.first_seq + n);
    check(r.shard == view.header.shard);
    check(r.op == Op::put || r.op == Op::erase);
    check(r.key.size() <= kMaxKeyBytes);
    const auto* k = reinterpret_cast<const std::byte*>(r.key.data());
    check(k >= view.payload && k + r.key.size() + r.value.size() <= payload_end);
    // Touch every byte so that ASan checks the bounds.
    (void)rdmarepl::crc32c::value(r.key.data(), r.key.size());
    (void)rdmarepl::crc32c::value(r.value.data(), r.value.size());
    check(b.fits(r.key.size(), r.value.size()));
    b.add(r.op, r.key, r.value, r.timestamp, cursor.group_next() ? kRecGroupNext : uint8_t{0});
    ++n;
  }
  check(n == view.header.record_count);
  check(b.seal() == view.padded_size());
  check(std::memcmp(again.data(), buf.data(), view.size()) == 0);
  return 0;
}
