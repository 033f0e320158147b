// The leader's pollers (leader_replies.h): the followers' replies (acknowledgements and
// checkpoint replies) drained from the carriers' completion queues into the links' mailboxes.
#include "leader_replies.h"

#include <fmt/format.h>

#include <array>

#include "imm.h"
#include "peer_violation.h"

namespace rdmarepl::replication::detail {

size_t LeaderReplies::poll_carrier(FollowerCarriers& fc, Carrier& c) noexcept {
  std::unique_lock lock(c.mu, std::try_to_lock);
  if (!lock.owns_lock() || !c.conn) return 0;
  return drain(fc, c, *c.conn);
}

size_t LeaderReplies::drain(FollowerCarriers& fc, Carrier& c,
                            transport::Connection& conn) noexcept {
  std::array<transport::Completion, 32> wc;
  const size_t n = conn.poll(wc);
  uint32_t reposts = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = wc[i];
    if (e.status != transport::WcStatus::success) {
      (void)count_peer_violation(conn, metrics_);
      fc.fail(transport::failure_reason(conn, e.status));
      return n;
    }
    if (e.opcode != transport::WcOpcode::recv_rdma_with_imm) continue;
    ++reposts;
    if (c.reply_mac.enabled() && !c.authentic(e)) {
      ChannelMetrics::add(metrics_.auth_failures);
      fc.fail(fmt::format(
          "authentication failed: the MAC of a reply (immediate 0x{:08x}, {} bytes) from "
          "follower {} ({}) does not match: it was forged, altered, replayed or reordered on "
          "the way; it was not counted",
          e.imm, e.byte_len, conn.peer().node_id, conn.peer().address));
      return n;
    }
    const uint32_t shard = imm_shard(e.imm);
    Link* l = shard < shards_.size() ? shards_[shard]->links[fc.follower].get() : nullptr;
    if (l != nullptr && imm_kind(e.imm) == ImmKind::checkpoint &&
        l->shipping.load(std::memory_order_acquire)) {
      l->ship_reply.store(imm_arg(e.imm), std::memory_order_relaxed);
      l->ship_replies.fetch_add(1, std::memory_order_release);  // the catch-up thread waits
      continue;
    }
    if (l == nullptr || imm_kind(e.imm) != ImmKind::ack) {
      ChannelMetrics::add(metrics_.protocol_errors);
      fc.fail(
          fmt::format("protocol error: unexpected immediate 0x{:08x} from the follower", e.imm));
      return n;
    }
    // The newest acknowledgement wins: they are cumulative. take_ack() checks it.
    l->ack_in.store(Link::kAckPresent | imm_arg(e.imm), std::memory_order_release);
  }
  if (reposts != 0 && conn.post_recvs(reposts) != transport::PostStatus::ok)
    fc.fail("re-posting receives failed");
  return n;
}

size_t LeaderReplies::poll(uint32_t worker, uint32_t workers) noexcept {
  size_t work = 0;
  size_t i = 0;
  for (auto& fc : carriers_)
    for (auto& c : fc->slots) {
      if (i++ % workers != worker || !c->up.load(std::memory_order_acquire)) continue;
      work += poll_carrier(*fc, *c);
    }
  return work;
}

}  // namespace rdmarepl::replication::detail
