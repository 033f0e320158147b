#include "hello.h"

#include <fmt/format.h>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::replication::detail {
namespace {

constexpr uint32_t kLeaderMagic = 0x52504C4Cu;    // "RPLL"
constexpr uint32_t kFollowerMagic = 0x52504C46u;  // "RPLF"
// 2: the follower hello's per-shard entries carry the buffer generation (16 bytes each).
// 3: connections are carriers of a session (any shard on any connection; the immediate
// carries the shard); the leader hello names its carrier and session.
// 4: the leader hello carries the leader's epoch (48 bytes); with a pre-shared key every
// batch and checkpoint chunk carries a 16-byte MAC after its bytes (write_mac.h), and the
// follower's large-record buffer has room for it.
// 5: a tag covers the immediate and the digest of the bytes (keyed by the pre-shared key
// alone), not the bytes themselves: the same layout, tags of version 4 no longer match.
constexpr uint16_t kHelloVersion = 5;
constexpr size_t kLeaderSize = 48;
constexpr size_t kVersionEnd = 6;  // magic and version: checked before the size
constexpr size_t kFollowerFixed = 32;
constexpr size_t kFollowerPerShard = 16;  // applied (8), generation (4), reserved (4)

Error bad(std::string_view peer, std::string_view what) {
  return Error(Errc::protocol_error,
               fmt::format("replication handshake from {}: {}; is the peer an rdmarepl {} of the "
                           "same version?",
                           peer, what, "channel"));
}

}  // namespace

std::string encode(const LeaderHello& h) {
  std::string out(kLeaderSize, '\0');
  char* p = out.data();
  store_be32(p, kLeaderMagic);
  store_be16(p + 4, kHelloVersion);
  store_be16(p + 6, 0);
  store_be32(p + 8, h.carrier);
  store_be32(p + 12, h.shard_count);
  store_be32(p + 16, h.queue_depth);
  store_be32(p + 20, h.session);
  store_be64(p + 24, h.ring_bytes);
  store_be64(p + 32, h.large_bytes);
  store_be64(p + 40, h.epoch);
  return out;
}

std::string encode(const FollowerHello& h) {
  std::string out(kFollowerFixed + kFollowerPerShard * h.applied.size(), '\0');
  char* p = out.data();
  store_be32(p, kFollowerMagic);
  store_be16(p + 4, kHelloVersion);
  store_be16(p + 6, 0);
  store_be32(p + 8, h.shard_count);
  store_be32(p + 12, h.queue_depth);
  store_be64(p + 16, h.ring_bytes);
  store_be64(p + 24, h.large_bytes);
  for (size_t i = 0; i < h.applied.size(); ++i) {
    char* e = p + kFollowerFixed + kFollowerPerShard * i;
    store_be64(e, h.applied[i]);
    store_be32(e + 8, i < h.generation.size() ? h.generation[i] : 0);
    store_be32(e + 12, 0);
  }
  return out;
}

Result<LeaderHello> parse_leader_hello(std::string_view b, std::string_view peer) {
  const char* p = b.data();
  // The version before the size: a leader of another version sends another size, and its
  // user needs to hear about the version.
  if (b.size() < kVersionEnd || load_be32(p) != kLeaderMagic)
    return bad(peer, "leader hello has a bad magic");
  if (load_be16(p + 4) != kHelloVersion)
    return bad(peer, fmt::format("leader hello version {} (this build speaks {}); upgrade the "
                                 "leader and its followers together",
                                 load_be16(p + 4), kHelloVersion));
  if (b.size() != kLeaderSize)
    return bad(peer, fmt::format("leader hello is {} bytes, expected {}", b.size(), kLeaderSize));
  LeaderHello h;
  h.carrier = load_be32(p + 8);
  h.shard_count = load_be32(p + 12);
  h.queue_depth = load_be32(p + 16);
  h.session = load_be32(p + 20);
  h.ring_bytes = load_be64(p + 24);
  h.large_bytes = load_be64(p + 32);
  h.epoch = load_be64(p + 40);
  if (h.carrier >= h.shard_count)
    return bad(peer, fmt::format("carrier {} out of range (at most shard_count {} carriers)",
                                 h.carrier, h.shard_count));
  return h;
}

Result<FollowerHello> parse_follower_hello(std::string_view b, std::string_view peer) {
  if (b.size() < kFollowerFixed)
    return bad(peer, fmt::format("follower hello is {} bytes", b.size()));
  const char* p = b.data();
  if (load_be32(p) != kFollowerMagic) return bad(peer, "follower hello has a bad magic");
  if (load_be16(p + 4) != kHelloVersion)
    return bad(peer, fmt::format("follower hello version {} (this build speaks {}); upgrade the "
                                 "leader and its followers together",
                                 load_be16(p + 4), kHelloVersion));
  FollowerHello h;
  h.shard_count = load_be32(p + 8);
  h.queue_depth = load_be32(p + 12);
  h.ring_bytes = load_be64(p + 16);
  h.large_bytes = load_be64(p + 24);
  if (b.size() != kFollowerFixed + kFollowerPerShard * size_t{h.shard_count})
    return bad(peer,
               fmt::format("follower hello is {} bytes for {} shards", b.size(), h.shard_count));
  h.applied.resize(h.shard_count);
  h.generation.resize(h.shard_count);
  for (size_t i = 0; i < h.shard_count; ++i) {
    const char* e = p + kFollowerFixed + kFollowerPerShard * i;
    h.applied[i] = load_be64(e);
    const uint32_t gen = load_be32(e + 8);
    if (gen >= kBufferGenerations || load_be32(e + 12) != 0)
      return bad(peer, fmt::format("follower hello names buffer generation {} (reserved {}) for "
                                   "shard {}; only 0 and 1 exist",
                                   gen, load_be32(e + 12), i));
    h.generation[i] = static_cast<uint8_t>(gen);
  }
  return h;
}

}  // namespace rdmarepl::replication::detail
