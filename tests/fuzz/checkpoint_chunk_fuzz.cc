// Fuzzes the checkpoint chunk header parser (decode_chunk_header): any bytes as what a
// leader wrote at offset 0 of a follower's large-record buffer. Parsing must never crash or
// read outside the input; a header it accepts must satisfy the documented invariants and
// re-encode to the same first 44 bytes (the last 4 are reserved and not checked).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "replication/checkpoint_ship.h"

using namespace rdmarepl::replication::detail;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size == 0) return 0;
  // An exactly sized heap copy so that ASan flags any read past the end.
  std::vector<std::byte> buf(raw_size - 1);
  if (!buf.empty()) std::memcpy(buf.data(), raw + 1, buf.size());
  // Random bytes almost never carry a valid header CRC: for half of the inputs (first byte
  // odd) it is repaired as the encoder writes it, so the field checks are reached.
  if ((raw[0] & 1) != 0 && buf.size() >= kChunkHeaderSize)
    rdmarepl::store_be32(buf.data() + 40,
                         rdmarepl::crc32c::mask(rdmarepl::crc32c::value(buf.data(), 40)));
  ChunkHeader h;
  std::string why;
  if (!decode_chunk_header(buf, h, why)) {
    check(!why.empty());
    return 0;
  }
  check(buf.size() >= kChunkHeaderSize);
  check(h.offset + h.length >= h.offset && h.offset + h.length <= h.total);
  check(h.last() == (h.offset + h.length == h.total));
  std::array<std::byte, kChunkHeaderSize> again{};
  encode_chunk_header(h, again);
  check(std::memcmp(again.data(), buf.data(), 44) == 0);
  return 0;
}
