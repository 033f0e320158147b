#include "write_mac.h"

#include <sodium.h>

#include <utility>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::replication::detail {

static_assert(crypto_onetimeauth_poly1305_BYTES == kMacTagBytes);
static_assert(crypto_onetimeauth_poly1305_KEYBYTES == 32);
static_assert(crypto_stream_chacha20_ietf_KEYBYTES == transport::kSessionKeyBytes);
static_assert(crypto_stream_chacha20_ietf_NONCEBYTES == 12);

WriteMac::~WriteMac() {
  sodium_memzero(key_.data(), key_.size());
}

WriteMac::WriteMac(WriteMac&& o) noexcept
    : key_(o.key_), counter_(o.counter_), enabled_(std::exchange(o.enabled_, false)) {
  sodium_memzero(o.key_.data(), o.key_.size());
}

WriteMac& WriteMac::operator=(WriteMac&& o) noexcept {
  if (this != &o) {
    key_ = o.key_;
    counter_ = o.counter_;
    enabled_ = std::exchange(o.enabled_, false);
    sodium_memzero(o.key_.data(), o.key_.size());
  }
  return *this;
}

void WriteMac::compute(uint32_t imm, std::span<const transport::LocalSegment> segments,
                       std::span<uint8_t, kMacTagBytes> tag) noexcept {
  // nonce = 4 zero bytes || counter (big-endian): unique per message under this key.
  std::array<uint8_t, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
  store_be64(nonce.data() + 4, counter_);
  std::array<uint8_t, crypto_onetimeauth_poly1305_KEYBYTES> one_time{};
  crypto_stream_chacha20_ietf(one_time.data(), one_time.size(), nonce.data(), key_.data());
  crypto_onetimeauth_poly1305_state st;
  crypto_onetimeauth_poly1305_init(&st, one_time.data());
  std::array<uint8_t, 4> context{};
  store_be32(context.data(), imm);
  crypto_onetimeauth_poly1305_update(&st, context.data(), context.size());
  for (const auto& s : segments)
    crypto_onetimeauth_poly1305_update(&st, static_cast<const unsigned char*>(s.addr), s.length);
  crypto_onetimeauth_poly1305_final(&st, tag.data());
  sodium_memzero(one_time.data(), one_time.size());
  sodium_memzero(&st, sizeof st);
}

void WriteMac::seal(uint32_t imm, std::span<const transport::LocalSegment> segments,
                    std::span<uint8_t, kMacTagBytes> tag) noexcept {
  compute(imm, segments, tag);
  ++counter_;
}

bool WriteMac::open(uint32_t imm, std::span<const std::byte> bytes,
                    std::span<const uint8_t, kMacTagBytes> tag) noexcept {
  const transport::LocalSegment whole{bytes.data(), static_cast<uint32_t>(bytes.size()), 0};
  std::array<uint8_t, kMacTagBytes> expected{};
  compute(imm, std::span(&whole, 1), expected);
  ++counter_;
  return sodium_memcmp(expected.data(), tag.data(), kMacTagBytes) == 0;
}

}  // namespace rdmarepl::replication::detail
