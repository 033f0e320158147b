// The 32-bit immediate of every replication write says what its completion means
// (docs/wire_format.md, "Immediates"): the top two bits are the kind, the low 30 bits its
// argument.
#pragma once

#include <cstdint>

namespace rdmarepl::replication {

enum class ImmKind : uint8_t {
  ring_batch = 0,   // leader -> follower: a batch at ring offset (arg * 8)
  large_batch = 1,  // leader -> follower: a batch at offset 0 of the large-record buffer
  ack = 2,          // follower -> leader: applied through seq S, arg = S mod 2^30
  // leader -> follower: a checkpoint chunk at offset 0 of the large-record buffer (arg 0);
  // follower -> leader: its reply to a chunk, zero-length, arg = a ShipReply code.
  checkpoint = 3,
};

inline constexpr uint32_t kImmArgBits = 30;
inline constexpr uint32_t kImmArgMask = (1u << kImmArgBits) - 1;
// Ring offsets travel in 8-byte units, so one ring may be up to 8 GiB.
inline constexpr uint64_t kMaxRingBytes = uint64_t{kImmArgMask + 1} * 8;

constexpr uint32_t make_imm(ImmKind kind, uint32_t arg) noexcept {
  return (static_cast<uint32_t>(kind) << kImmArgBits) | (arg & kImmArgMask);
}
constexpr ImmKind imm_kind(uint32_t imm) noexcept {
  return static_cast<ImmKind>(imm >> kImmArgBits);
}
constexpr uint32_t imm_arg(uint32_t imm) noexcept {
  return imm & kImmArgMask;
}

// Recovers a full seq from its low 30 bits, given a reference seq known to be at most 2^29
// below or above it (the leader uses the oldest unacknowledged seq of the connection).
constexpr uint64_t widen_seq(uint32_t low, uint64_t reference) noexcept {
  constexpr uint64_t kSpan = uint64_t{1} << kImmArgBits;
  uint64_t candidate = (reference & ~(kSpan - 1)) | low;
  if (candidate + kSpan / 2 < reference)
    candidate += kSpan;
  else if (candidate > reference + kSpan / 2 && candidate >= kSpan)
    candidate -= kSpan;
  return candidate;
}

}  // namespace rdmarepl::replication
