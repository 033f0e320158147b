// Authentication of the replication writes of one connection after the handshake
// (docs/wire_format.md, "Write authentication"). With a pre-shared key the bootstrap
// handshake gives each connection two 32-byte session keys, one per direction. Every
// batch and checkpoint chunk the leader writes carries a 16-byte tag after its bytes:
// Poly1305 keyed with a one-time key, the first 32 bytes of ChaCha20 (IETF) under the
// direction's session key with the message's counter as nonce (the construction of
// ChaCha20-Poly1305, without encryption). The tag covers the immediate (kind and shard) and
// every byte written before it (the batch header holds the shard and the first seq). The
// counter is the number of messages sent before in that direction on that connection; it
// never travels, so the receiver recomputes it: a replayed, reordered, dropped or truncated
// message fails its check.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rdmarepl/transport/types.h"

namespace rdmarepl::replication::detail {

// Bytes of the tag that follows an authenticated message.
inline constexpr uint32_t kMacTagBytes = 16;

// One direction of one connection: its session key and how many messages went before.
class WriteMac {
 public:
  WriteMac() = default;
  explicit WriteMac(const transport::SessionKey& key) noexcept : key_(key), enabled_(true) {}
  ~WriteMac();
  WriteMac(const WriteMac&) = delete;
  WriteMac& operator=(const WriteMac&) = delete;
  WriteMac(WriteMac&& o) noexcept;
  WriteMac& operator=(WriteMac&& o) noexcept;

  // Whether the connection is authenticated (a pre-shared key on both sides).
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  [[nodiscard]] uint64_t counter() const noexcept { return counter_; }

  // Sender: the tag of the next message, `imm` and the bytes of `segments` in order (the
  // local segments of a gathered write). Advances the counter.
  void seal(uint32_t imm, std::span<const transport::LocalSegment> segments,
            std::span<uint8_t, kMacTagBytes> tag) noexcept;
  // Sender: the message last sealed was not sent after all; its counter is used again.
  void retract() noexcept { --counter_; }
  // Receiver: whether `tag` is the tag of the next message (`imm`, `bytes`), compared in
  // constant time. Advances the counter either way (a failure ends the connection).
  [[nodiscard]] bool open(uint32_t imm, std::span<const std::byte> bytes,
                          std::span<const uint8_t, kMacTagBytes> tag) noexcept;

 private:
  void compute(uint32_t imm, std::span<const transport::LocalSegment> segments,
               std::span<uint8_t, kMacTagBytes> tag) noexcept;

  transport::SessionKey key_{};
  uint64_t counter_ = 0;
  bool enabled_ = false;
};

}  // namespace rdmarepl::replication::detail
