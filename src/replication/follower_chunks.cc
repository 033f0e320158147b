// Checking and keeping the chunks of a checkpoint a follower shard receives
// (follower_chunks.h).
#include "follower_chunks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::replication::detail {

bool IncomingCheckpoint::check(std::span<const std::byte> in, uint32_t byte_len, ChunkHeader& h,
                               std::string& why) {
  if (ready_) {
    why =
        "protocol error: a checkpoint chunk arrived while the previous checkpoint is being "
        "installed";
    return false;
  }
  if (!decode_chunk_header(in, h, why)) {
    why = "protocol error: " + why + "; nothing of the checkpoint was installed";
    reset();
    return false;
  }
  if (byte_len != kChunkHeaderSize + uint64_t{h.length}) {
    why = fmt::format(
        "protocol error: checkpoint chunk of {} payload bytes arrived as a write of "
        "{} bytes",
        h.length, byte_len);
    reset();
    return false;
  }
  return true;
}

bool IncomingCheckpoint::start(uint64_t id, uint64_t total) noexcept {
  reset();
  try {
    bytes_.resize(total);
  } catch (const std::bad_alloc&) {
    reset();
    return false;
  }
  active_ = true;
  id_ = id;
  total_ = total;
  return true;
}

bool IncomingCheckpoint::take(const ChunkHeader& h, const uint8_t* payload, std::string& why) {
  if (h.offset != 0 && (!active_ || h.id != id_ || h.total != total_ || h.offset != received_)) {
    why = fmt::format(
        "protocol error: checkpoint chunk of checkpoint {} at offset {} does not continue the "
        "one being received (checkpoint {}, {} of {} bytes); nothing of it was installed",
        h.id, h.offset, id_, received_, total_);
    reset();
    return false;
  }
  const uint32_t crc = crc32c::extend(crc_, payload, h.length);
  if (crc != h.crc) {
    why = fmt::format(
        "checkpoint {} fails its CRC32C at the chunk at offset {} ({} bytes): nothing of it was "
        "installed (the leader ships it again after reconnecting)",
        h.id, h.offset, h.length);
    reset();
    return false;
  }
  if (h.length != 0) std::memcpy(bytes_.data() + h.offset, payload, h.length);
  crc_ = crc;
  received_ += h.length;
  if (h.last()) ready_ = true;
  return true;
}

}  // namespace rdmarepl::replication::detail
