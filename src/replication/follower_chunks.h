// A checkpoint being received by one follower shard, chunk by chunk (ImmKind::checkpoint
// writes into its large-record buffer, one in flight): each chunk is checked (header,
// length, continuity, running payload CRC32C) and its payload copied aside, until the last
// one makes it `ready` for the accept thread to install. The Follower answers the chunks and
// installs the checkpoint (follower_ship.cc). See docs/wire_format.md ("Checkpoint
// shipping").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_ship.h"

namespace rdmarepl::replication::detail {

class IncomingCheckpoint {
 public:
  // The header of the chunk in `in` (a write of `byte_len` bytes): false (and `why`, a
  // protocol error) when a checkpoint is already waiting to be installed, the header does
  // not decode, or the write's length does not match it; then nothing is kept.
  bool check(std::span<const std::byte> in, uint32_t byte_len, ChunkHeader& h, std::string& why);
  // A first chunk arrived: room for checkpoint `id` of `total` bytes (a new one, or the
  // same one again after a reconnect). False when there is no memory for it.
  bool start(uint64_t id, uint64_t total) noexcept;
  // Takes chunk `h` with `payload` (h.length bytes): false (and `why`) when it does not
  // continue the checkpoint being received or fails its CRC; then nothing is kept. After
  // the last chunk, ready().
  bool take(const ChunkHeader& h, const uint8_t* payload, std::string& why);

  // The last chunk verified: the checkpoint waits for the accept thread.
  [[nodiscard]] bool ready() const noexcept { return ready_; }
  [[nodiscard]] uint64_t id() const noexcept { return id_; }
  // The payload of a ready checkpoint, moved out for installing.
  [[nodiscard]] std::vector<uint8_t> release() noexcept { return std::move(bytes_); }
  // Forgets what was received (shipped again from its start).
  void reset() noexcept { *this = IncomingCheckpoint(); }

 private:
  bool active_ = false;
  bool ready_ = false;
  uint64_t id_ = 0;
  uint64_t total_ = 0;
  uint64_t received_ = 0;
  uint32_t crc_ = 0;  // running CRC32C of the payload received
  std::vector<uint8_t> bytes_;
};

}  // namespace rdmarepl::replication::detail
