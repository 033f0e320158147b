// Authentication of the replication writes of one connection after the handshake
// (docs/wire_format.md, "Write authentication"). With a pre-shared key the bootstrap
// handshake gives each connection two 32-byte session keys, one per direction, and a
// digest key that depends on the pre-shared key only. Every batch and checkpoint chunk the
// leader writes carries a 16-byte tag after its bytes. The tag is Poly1305 over the
// immediate (kind and shard) and the message's digest, keyed with a one-time key: the first
// 32 bytes of ChaCha20 (IETF) under the direction's session key with the message's counter
// as nonce. The digest is Poly1305 keyed with the digest key over every byte written
// before the tag (the batch header holds the shard and the first seq); it never travels,
// and it does not depend on the connection, so a leader computes it once per batch for all
// its followers. The counter is the number of messages sent before in that direction on
// that connection; it never travels either, so the receiver recomputes it: a replayed,
// reordered, dropped or truncated message fails its check.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdmarepl/transport/types.h"

namespace rdmarepl::replication::detail {

// Bytes of the tag that follows an authenticated message, and of a message's digest.
inline constexpr uint32_t kMacTagBytes = 16;
inline constexpr uint32_t kDigestBytes = 16;
using Digest = std::array<uint8_t, kDigestBytes>;

// A message's digest, computed on its first send and kept for the others (a batch of the
// retained window goes to every follower, and again after a reconnect; its bytes do not
// change meanwhile).
struct DigestCache {
  Digest value{};
  bool valid = false;
};

// One direction of one connection: its session key, the digest key, and how many messages
// went before.
class WriteMac {
 public:
  WriteMac() = default;
  WriteMac(const transport::SessionKey& key, const transport::SessionKey& digest_key) noexcept
      : key_(key), digest_key_(digest_key), enabled_(true) {}
  ~WriteMac();
  WriteMac(const WriteMac&) = delete;
  WriteMac& operator=(const WriteMac&) = delete;
  WriteMac(WriteMac&& o) noexcept;
  WriteMac& operator=(WriteMac&& o) noexcept;

  // Whether the connection is authenticated (a pre-shared key on both sides).
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  [[nodiscard]] uint64_t counter() const noexcept { return counter_; }

  // The digest of the bytes of `segments` in order (the local segments of a gathered
  // write): the same on every connection with this pre-shared key.
  void digest(std::span<const transport::LocalSegment> segments, Digest& out) const noexcept;
  // Sender: the tag of the next message, `imm` and the bytes whose digest is `digest`.
  // Advances the counter.
  void seal_digest(uint32_t imm, const Digest& digest,
                   std::span<uint8_t, kMacTagBytes> tag) noexcept;
  // Sender: the same, for the bytes of `segments` in order.
  void seal(uint32_t imm, std::span<const transport::LocalSegment> segments,
            std::span<uint8_t, kMacTagBytes> tag) noexcept;
  // Sender: the message last sealed was not sent after all; its counter is used again.
  void retract() noexcept { --counter_; }
  // Receiver: whether `tag` is the tag of the next message (`imm`, `bytes`), compared in
  // constant time. Advances the counter either way (a failure ends the connection).
  [[nodiscard]] bool open(uint32_t imm, std::span<const std::byte> bytes,
                          std::span<const uint8_t, kMacTagBytes> tag) noexcept;

 private:
  void compute(uint32_t imm, const Digest& digest,
               std::span<uint8_t, kMacTagBytes> tag) const noexcept;

  transport::SessionKey key_{};
  transport::SessionKey digest_key_{};
  uint64_t counter_ = 0;
  bool enabled_ = false;
};

}  // namespace rdmarepl::replication::detail
