#include "write_mac.h"

#include <sodium.h>

#include <algorithm>
#include <utility>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::replication::detail {

static_assert(crypto_onetimeauth_poly1305_BYTES == kMacTagBytes);
static_assert(crypto_onetimeauth_poly1305_BYTES == kDigestBytes);
static_assert(crypto_onetimeauth_poly1305_KEYBYTES == transport::kSessionKeyBytes);
static_assert(crypto_stream_chacha20_ietf_KEYBYTES == transport::kSessionKeyBytes);
static_assert(crypto_stream_chacha20_ietf_NONCEBYTES == 12);

WriteMac::~WriteMac() {
  sodium_memzero(key_.data(), key_.size());
  sodium_memzero(digest_key_.data(), digest_key_.size());
}

WriteMac::WriteMac(WriteMac&& o) noexcept
    : key_(o.key_),
      digest_key_(o.digest_key_),
      counter_(o.counter_),
      enabled_(std::exchange(o.enabled_, false)) {
  sodium_memzero(o.key_.data(), o.key_.size());
  sodium_memzero(o.digest_key_.data(), o.digest_key_.size());
}

WriteMac& WriteMac::operator=(WriteMac&& o) noexcept {
  if (this != &o) {
    key_ = o.key_;
    digest_key_ = o.digest_key_;
    counter_ = o.counter_;
    enabled_ = std::exchange(o.enabled_, false);
    sodium_memzero(o.key_.data(), o.key_.size());
    sodium_memzero(o.digest_key_.data(), o.digest_key_.size());
  }
  return *this;
}

void WriteMac::digest(std::span<const transport::LocalSegment> segments,
                      Digest& out) const noexcept {
  // A universal hash under a key that is reused: its value is never sent, only fed into
  // the one-time tag below, which hides it completely (as Poly1305-AES hides its hash).
  crypto_onetimeauth_poly1305_state st;
  crypto_onetimeauth_poly1305_init(&st, digest_key_.data());
  for (const auto& s : segments)
    crypto_onetimeauth_poly1305_update(&st, static_cast<const unsigned char*>(s.addr), s.length);
  crypto_onetimeauth_poly1305_final(&st, out.data());
  sodium_memzero(&st, sizeof st);
}

void WriteMac::compute(uint32_t imm, const Digest& digest,
                       std::span<uint8_t, kMacTagBytes> tag) const noexcept {
  // nonce = 4 zero bytes || counter (big-endian): unique per message under this key.
  std::array<uint8_t, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
  store_be64(nonce.data() + 4, counter_);
  std::array<uint8_t, crypto_onetimeauth_poly1305_KEYBYTES> one_time{};
  crypto_stream_chacha20_ietf(one_time.data(), one_time.size(), nonce.data(), key_.data());
  std::array<uint8_t, 4 + kDigestBytes> message{};
  store_be32(message.data(), imm);
  std::copy(digest.begin(), digest.end(), message.begin() + 4);
  crypto_onetimeauth_poly1305(tag.data(), message.data(), message.size(), one_time.data());
  sodium_memzero(one_time.data(), one_time.size());
}

void WriteMac::seal_digest(uint32_t imm, const Digest& digest,
                           std::span<uint8_t, kMacTagBytes> tag) noexcept {
  compute(imm, digest, tag);
  ++counter_;
}

void WriteMac::seal(uint32_t imm, std::span<const transport::LocalSegment> segments,
                    std::span<uint8_t, kMacTagBytes> tag) noexcept {
  Digest d;
  digest(segments, d);
  seal_digest(imm, d, tag);
}

bool WriteMac::open(uint32_t imm, std::span<const std::byte> bytes,
                    std::span<const uint8_t, kMacTagBytes> tag) noexcept {
  const transport::LocalSegment whole{bytes.data(), static_cast<uint32_t>(bytes.size()), 0};
  Digest d;
  digest(std::span(&whole, 1), d);
  std::array<uint8_t, kMacTagBytes> expected{};
  compute(imm, d, expected);
  ++counter_;
  return sodium_memcmp(expected.data(), tag.data(), kMacTagBytes) == 0;
}

}  // namespace rdmarepl::replication::detail
