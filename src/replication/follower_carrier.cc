// One carrier of the follower's session (follower_shard.h): wrapping an accepted connection
// with the MACs of its session keys, and posting acknowledgements and checkpoint replies on
// it (authenticated with a tag when keyed). See docs/replication.md, "Carriers".
#include <fmt/format.h>

#include "follower_shard.h"

namespace rdmarepl::replication::detail {

Result<std::unique_ptr<FollowerCarrier>> FollowerCarrier::wrap(
    std::unique_ptr<transport::Connection>& conn, const ChannelOptions& options,
    ChannelMemory& memory) {
  auto c = std::make_unique<FollowerCarrier>();
  if (!options.pre_shared_key.empty()) {
    const auto& info = conn->peer();
    if (info.regions.size() < 2 || info.regions[1].length < kMacTagBytes)
      return Error(Errc::protocol_error,
                   fmt::format("leader {} ({}) advertised no slots for authenticated "
                               "acknowledgements (regions[1])",
                               info.node_id, info.address));
    // One slot more than our send queue holds writes (queue_depth + 8): the slot a new tag
    // goes to belongs to a write that left the queue, even when the queue is full and the
    // new one is refused.
    auto tags = memory.take(size_t{options.queue_depth + 9} * kMacTagBytes,
                            transport::Access::local_write, "acknowledgement tags");
    if (!tags.ok()) return std::move(tags).error();
    c->tags = std::move(tags).value();
    c->reply_slots = info.regions[1];
    // The leader's writes are authenticated with its sending key, our receiving one.
    c->mac = WriteMac(info.session_keys.recv, info.session_keys.digest);
    c->reply_mac = WriteMac(info.session_keys.send, info.session_keys.digest);
  }
  c->conn = std::move(conn);
  return c;
}

transport::PostStatus FollowerCarrier::post_reply(uint32_t imm) noexcept {
  transport::WriteRequest w;
  const auto& target = conn->peer().regions.front();
  w.remote_addr = target.addr;
  w.rkey = target.rkey;
  w.imm = imm;
  w.signaled = false;  // nothing waits for its completion; errors still complete
  if (reply_mac.enabled()) {
    const uint64_t n = reply_mac.counter();
    std::byte* tag = tags.data() + (n % (tags.size() / kMacTagBytes)) * kMacTagBytes;
    reply_mac.seal(imm, {},
                   std::span<uint8_t, kMacTagBytes>(reinterpret_cast<uint8_t*>(tag), kMacTagBytes));
    w.local_addr = tag;
    w.length = kMacTagBytes;
    w.lkey = tags.lkey();
    w.remote_addr = reply_slots.addr + (n % (reply_slots.length / kMacTagBytes)) * kMacTagBytes;
    w.rkey = reply_slots.rkey;
  }
  const auto st = conn->post_writes(std::span<const transport::WriteRequest>(&w, 1));
  if (st != transport::PostStatus::ok && reply_mac.enabled()) reply_mac.retract();
  return st;
}

}  // namespace rdmarepl::replication::detail
