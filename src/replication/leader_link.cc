#include "leader_link.h"

#include <array>
#include <optional>
#include <span>

#include "imm.h"
#include "rdmarepl/replication/detail/batch_format.h"

namespace rdmarepl::replication::detail {

transport::PostStatus Carrier::post(transport::WriteRequest& wr, DigestCache* digest) noexcept {
  const bool sealed = mac.enabled();
  if (sealed) {
    if (wr.extra_count >= transport::kMaxWriteSegments - 1 || tag_slots == 0)
      return transport::PostStatus::invalid;
    DigestCache fresh;
    DigestCache& d = digest != nullptr ? *digest : fresh;
    if (!d.valid) {
      std::array<transport::LocalSegment, transport::kMaxWriteSegments> segments{};
      for (size_t i = 0; i < wr.segment_count(); ++i) segments[i] = wr.segment(i);
      mac.digest(std::span(segments.data(), wr.segment_count()), d.value);
      d.valid = true;
    }
    std::byte* tag = tags + (mac.counter() % tag_slots) * kMacTagBytes;
    mac.seal_digest(
        wr.imm, d.value,
        std::span<uint8_t, kMacTagBytes>(reinterpret_cast<uint8_t*>(tag), kMacTagBytes));
    wr.extra[wr.extra_count++] = transport::LocalSegment{tag, kMacTagBytes, tags_lkey};
  }
  const auto st = conn->post_writes(std::span<const transport::WriteRequest>(&wr, 1));
  if (st != transport::PostStatus::ok && sealed) mac.retract();
  return st;
}

bool Carrier::authentic(const transport::Completion& e) noexcept {
  if (e.byte_len != kMacTagBytes) return false;  // no tag (or more than one)
  const uint64_t slot = reply_mac.counter() % (reply_region.length / kMacTagBytes);
  const auto* tag = reinterpret_cast<const uint8_t*>(reply_tags + slot * kMacTagBytes);
  return reply_mac.open(e.imm, {}, std::span<const uint8_t, kMacTagBytes>(tag, kMacTagBytes));
}

Link::Post Link::post_batch(const transport::WriteRequest& bytes, bool large_batch,
                            uint64_t last_seq, uint64_t wr_id, DigestCache* digest) noexcept {
  if (inflight_count + 2 >= inflight.size()) return Post::no_room;
  // Acknowledgements carry 20 bits of a seq: never more records unacknowledged than that.
  if (inflight_count > 0 &&
      last_seq > acked_seq.load(std::memory_order_relaxed) + kMaxUnackedRecords)
    return Post::no_room;
  // A shard moves to the carrier it should be on only with nothing in flight (the follower
  // acknowledged everything posted on the old one), so its batches arrive in order.
  const uint32_t want = carriers->target(shard, carrier);
  if (want != carrier) {
    if (inflight_count > 0) return Post::no_room;
    {
      // The control thread pools a carrier nobody uses under this lock (Leader::pool_idle()):
      // either it sees this user, or this shard sees the carrier gone and stays put.
      Carrier& next = *carriers->slots[want];
      std::lock_guard lock(next.mu);
      if (!next.conn) return Post::no_room;
      next.users.fetch_add(1, std::memory_order_relaxed);
    }
    carriers->slots[carrier]->users.fetch_sub(1, std::memory_order_relaxed);
    carrier = want;
    ChannelMetrics::add(carriers->metrics->carrier_moves);
  }
  transport::WriteRequest wr = bytes;
  // What the batch takes at the follower: its bytes and, authenticated, its tag.
  const uint64_t len = bytes.total_length() + (carriers->keyed ? kMacTagBytes : 0);
  wr.wr_id = wr_id;
  // The follower's acknowledgement is what frees the batch; a send completion would only
  // cost a transport acknowledgement per batch (a frame and a system call each way over
  // TCP). The transports still retire unsignaled requests on their own.
  wr.signaled = false;
  std::optional<uint64_t> at;
  if (large_batch) {
    if (large_busy) return Post::no_room;
    wr.remote_addr = large.addr;
    wr.rkey = large.rkey;
    wr.imm = make_imm(ImmKind::large_batch, shard, 0);
  } else {
    at = ring_space.where(len);
    if (!at) return Post::no_room;
    wr.remote_addr = ring.addr + *at;
    wr.rkey = ring.rkey;
    wr.imm = make_imm(ImmKind::ring_batch, shard, ring_imm_arg(*at));
  }
  Carrier& c = *carriers->slots[carrier];
  {
    std::lock_guard lock(c.mu);
    if (!c.conn) return Post::disconnected;
    // The follower posts queue_depth + 4 receives per connection, whatever shards it carries.
    if (c.inflight + 2 >= carriers->queue_depth) return Post::no_room;
    const auto st = c.post(wr, digest);
    if (st == transport::PostStatus::queue_full) return Post::queue_full;
    if (st == transport::PostStatus::disconnected) return Post::disconnected;
    if (st != transport::PostStatus::ok) return Post::refused;
    ++c.inflight;
  }
  InFlight f;
  f.last_seq = last_seq;
  f.large = large_batch;
  f.carrier = carrier;
  if (large_batch)
    large_busy = true;
  else
    f.ring_consumed = ring_space.place(len).consumed;
  // The first batch in flight starts the follower's ack_timeout: before it, it owed nothing.
  if (inflight_count == 0) quiet_since_ns = mono_ns();
  inflight[(inflight_head + inflight_count) % inflight.size()] = f;
  ++inflight_count;
  if (last_seq > sent_seq) sent_seq = last_seq;
  return Post::posted;
}

transport::PostStatus Link::post_raw(transport::WriteRequest wr) noexcept {
  wr.imm = make_imm(imm_kind(wr.imm), shard, imm_arg(wr.imm));
  Carrier& c = *carriers->slots[carrier];
  std::lock_guard lock(c.mu);
  if (!c.conn) return transport::PostStatus::disconnected;
  return c.post(wr);
}

std::string Link::failure() const {
  Carrier& c = *carriers->slots[carrier];
  std::lock_guard lock(c.mu);
  if (!c.conn) return "the connection is closed";
  return transport::failure_reason(*c.conn, transport::WcStatus::flushed);
}

void Link::retire(uint64_t seq) noexcept {
  while (inflight_count > 0 && inflight[inflight_head].last_seq <= seq) {
    const InFlight& f = inflight[inflight_head];
    if (f.large)
      large_busy = false;
    else
      ring_space.release(f.ring_consumed);
    {
      Carrier& c = *carriers->slots[f.carrier];
      std::lock_guard lock(c.mu);
      if (c.inflight > 0) --c.inflight;
    }
    inflight_head = (inflight_head + 1) % inflight.size();
    --inflight_count;
  }
}

void Link::reset_flow() noexcept {
  inflight_head = inflight_count = 0;
  large_busy = false;
  stalled = false;
  ring_space.reset();
}

void Link::leave_carrier() noexcept {
  carriers->slots[carrier]->users.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace rdmarepl::replication::detail
