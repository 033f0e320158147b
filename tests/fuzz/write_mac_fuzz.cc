// Fuzzes the check of a replication write's tag (docs/wire_format.md, "Write
// authentication"): WriteMac::open as the follower runs it on a batch or checkpoint chunk
// and the leader on an acknowledgement or checkpoint reply (a tag alone, its immediate the
// reply code). The first input byte picks the mode:
//   even: the rest is `imm u32 | bytes | tag[16]` as a peer without the session key might
//         write it; open() must accept exactly when the tag is the one the sender computes
//         for that message (never for anything else), and never read outside the input;
//   odd:  the rest is `imm u32 | bytes`, sealed by a real sender, then one bit of the
//         message (immediate, bytes or tag, chosen by the input) flipped: open() must refuse
//         it, and accept the unchanged one.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sodium.h>

#include "rdmarepl/core/byte_order.h"
#include "replication/write_mac.h"

namespace repl = rdmarepl::replication::detail;
using rdmarepl::transport::LocalSegment;
using rdmarepl::transport::SessionKey;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

SessionKey session_key() {
  SessionKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(0x40 + i);
  return k;
}

SessionKey digest_key() {
  SessionKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(0x90 ^ (i * 3));
  return k;
}

// The tag a sender with the session key gives message number `n` of the connection.
std::array<uint8_t, repl::kMacTagBytes> sealed(uint32_t imm, const std::vector<std::byte>& bytes,
                                               uint64_t n) {
  repl::WriteMac sender(session_key(), digest_key());
  std::array<uint8_t, repl::kMacTagBytes> tag{};
  const LocalSegment seg{bytes.data(), static_cast<uint32_t>(bytes.size()), 0};
  for (uint64_t i = 0; i <= n; ++i)
    sender.seal(imm, std::span<const LocalSegment>(&seg, bytes.empty() ? 0 : 1), tag);
  return tag;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  return sodium_init() < 0 ? 1 : 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size < 1 + 4) return 0;
  const bool genuine = (raw[0] & 1) != 0;
  const uint8_t message = static_cast<uint8_t>(raw[0] >> 1);  // 0..127: its place in the stream
  const uint32_t imm = rdmarepl::load_be32(raw + 1);
  const uint8_t* rest = raw + 5;
  size_t rest_size = raw_size - 5;
  if (!genuine) {
    if (rest_size < repl::kMacTagBytes) return 0;
    // Exactly sized heap copies so that ASan flags any read past the end.
    const std::vector<std::byte> bytes(
        reinterpret_cast<const std::byte*>(rest),
        reinterpret_cast<const std::byte*>(rest) + rest_size - repl::kMacTagBytes);
    std::array<uint8_t, repl::kMacTagBytes> tag{};
    std::memcpy(tag.data(), rest + bytes.size(), tag.size());
    repl::WriteMac receiver(session_key(), digest_key());
    for (uint8_t i = 0; i < message % 4; ++i) {  // messages before this one
      std::array<uint8_t, repl::kMacTagBytes> t = sealed(0, {}, i);
      check(receiver.open(0, {}, t));
    }
    const bool accepted = receiver.open(imm, bytes, tag);
    check(accepted == (tag == sealed(imm, bytes, message % 4)));
    check(receiver.counter() == message % 4 + 1u);
    return 0;
  }
  // A genuine message, then the same with one bit flipped.
  if (rest_size < 2) return 0;
  const uint16_t flip = rdmarepl::load_be16(rest);
  rest += 2;
  rest_size -= 2;
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(rest),
                                     reinterpret_cast<const std::byte*>(rest) + rest_size);
  const auto tag = sealed(imm, bytes, 0);
  {
    repl::WriteMac receiver(session_key(), digest_key());
    check(receiver.open(imm, bytes, tag));
  }
  const size_t bits = 8 * (4 + bytes.size() + tag.size());
  const size_t bit = flip % bits;
  uint32_t imm2 = imm;
  std::vector<std::byte> bytes2 = bytes;
  auto tag2 = tag;
  if (bit < 32)
    imm2 ^= 1u << bit;
  else if (bit < 32 + 8 * bytes.size())
    bytes2[(bit - 32) / 8] ^= std::byte{static_cast<uint8_t>(1u << (bit % 8))};
  else
    tag2[(bit - 32 - 8 * bytes.size()) / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  repl::WriteMac receiver(session_key(), digest_key());
  check(!receiver.open(imm2, bytes2, tag2));
  // And a message taken for the next one in the stream (a replay or reordering) fails too.
  repl::WriteMac later(session_key(), digest_key());
  std::array<uint8_t, repl::kMacTagBytes> first = sealed(0, {}, 0);
  check(later.open(0, {}, first));
  check(!later.open(imm, bytes, tag));
  return 0;
}
