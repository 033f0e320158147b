#include "leader_link.h"

#include <optional>
#include <span>

#include "imm.h"
#include "rdmarepl/replication/detail/batch_format.h"

namespace rdmarepl::replication::detail {

Link::Post Link::post_batch(const transport::WriteRequest& bytes, bool large_batch,
                            uint64_t last_seq, uint64_t wr_id) noexcept {
  if (inflight_count + 2 >= inflight.size()) return Post::no_room;
  transport::WriteRequest wr = bytes;
  const uint64_t len = bytes.total_length();
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
    wr.imm = make_imm(ImmKind::large_batch, 0);
  } else {
    at = ring_space.where(len);
    if (!at) return Post::no_room;
    wr.remote_addr = ring.addr + *at;
    wr.rkey = ring.rkey;
    wr.imm = make_imm(ImmKind::ring_batch, static_cast<uint32_t>(*at / kBatchAlign));
  }
  const auto st = conn->post_writes(std::span<const transport::WriteRequest>(&wr, 1));
  if (st == transport::PostStatus::queue_full) return Post::queue_full;
  if (st == transport::PostStatus::disconnected) return Post::disconnected;
  if (st != transport::PostStatus::ok) return Post::refused;
  InFlight f;
  f.last_seq = last_seq;
  f.large = large_batch;
  if (large_batch)
    large_busy = true;
  else
    f.ring_consumed = ring_space.place(len).consumed;
  inflight[(inflight_head + inflight_count) % inflight.size()] = f;
  ++inflight_count;
  if (last_seq > sent_seq) sent_seq = last_seq;
  return Post::posted;
}

void Link::retire(uint64_t seq) noexcept {
  while (inflight_count > 0 && inflight[inflight_head].last_seq <= seq) {
    const InFlight& f = inflight[inflight_head];
    if (f.large)
      large_busy = false;
    else
      ring_space.release(f.ring_consumed);
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

}  // namespace rdmarepl::replication::detail
