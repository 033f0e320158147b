// The 32-bit immediate of every replication write says what its completion means
// (docs/wire_format.md, "Immediates"): the top two bits are the kind, the next ten the shard
// the write belongs to (so that any connection of a follower can carry any shard), the low
// 20 bits its argument.
#pragma once

#include <cstdint>

namespace rdmarepl::replication {

enum class ImmKind : uint8_t {
  ring_batch = 0,   // leader -> follower: a batch in the shard's ring (see ring_imm_arg)
  large_batch = 1,  // leader -> follower: a batch at offset 0 of the large-record buffer
  ack = 2,          // follower -> leader: applied through seq S, arg = S mod 2^20
  // leader -> follower: a checkpoint chunk at offset 0 of the large-record buffer (arg 0);
  // follower -> leader: its reply to a chunk, zero-length, arg = a ShipReply code.
  checkpoint = 3,
};

inline constexpr uint32_t kImmShardBits = 10;  // validate() allows up to 1024 shards
inline constexpr uint32_t kImmArgBits = 20;
inline constexpr uint32_t kImmArgMask = (1u << kImmArgBits) - 1;
inline constexpr uint32_t kImmShardMask = (1u << kImmShardBits) - 1;
// The largest ring a follower may have (the ring offset does not travel whole: see below).
inline constexpr uint64_t kMaxRingBytes = uint64_t{8} << 30;
// Acknowledgements carry 20 bits of a seq: a connection never has more than this many
// records sent and not yet acknowledged on one shard, so that the leader recovers the seq.
inline constexpr uint64_t kMaxUnackedRecords = kImmArgMask;
// A batch holds at most this many records (the leader seals it there), so that one batch
// alone always fits the acknowledgement's range.
inline constexpr uint32_t kMaxBatchRecords = 1u << 16;

constexpr uint32_t make_imm(ImmKind kind, uint32_t shard, uint32_t arg) noexcept {
  return (static_cast<uint32_t>(kind) << (kImmArgBits + kImmShardBits)) |
         ((shard & kImmShardMask) << kImmArgBits) | (arg & kImmArgMask);
}
constexpr ImmKind imm_kind(uint32_t imm) noexcept {
  return static_cast<ImmKind>(imm >> (kImmArgBits + kImmShardBits));
}
constexpr uint32_t imm_shard(uint32_t imm) noexcept {
  return (imm >> kImmArgBits) & kImmShardMask;
}
constexpr uint32_t imm_arg(uint32_t imm) noexcept {
  return imm & kImmArgMask;
}

// A ring batch is always at the follower's cursor (where the shard's previous batch ended)
// or at offset 0 (after a wrap or at the start of a connection session). The argument says
// which: bit 19 set means offset 0 (the rest is 0); otherwise the batch is at the cursor and
// the low 19 bits are (offset / 8) mod 2^19, which the follower checks against its cursor.
inline constexpr uint32_t kRingAtZero = 1u << (kImmArgBits - 1);
constexpr uint32_t ring_imm_arg(uint64_t offset) noexcept {
  return offset == 0 ? kRingAtZero : static_cast<uint32_t>((offset / 8) & (kRingAtZero - 1));
}
// Whether `arg` names a batch at `offset` (the follower's cursor, or 0).
constexpr bool ring_imm_matches(uint32_t arg, uint64_t offset) noexcept {
  return ring_imm_arg(offset) == arg;
}

// Recovers a full seq from its low 20 bits, given the last seq acknowledged on the shard
// (`acked`): acknowledgements never go backwards, and at most kMaxUnackedRecords records are
// unacknowledged, so the seq is the first at or after `acked` with these low bits.
constexpr uint64_t widen_seq(uint32_t low, uint64_t acked) noexcept {
  return acked + ((low - static_cast<uint32_t>(acked)) & kImmArgMask);
}

}  // namespace rdmarepl::replication
