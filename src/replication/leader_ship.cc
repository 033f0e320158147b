// Shipping the leader's newest checkpoint to a follower its log no longer reaches: in
// chunks through the follower's large-record buffer, one in flight, each waiting for the
// follower's reply (docs/wire_format.md, "Checkpoint shipping"). The file is read with no
// lock held; the shard lock is taken only to post a chunk and to look at the replies.
#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "imm.h"
#include "leader_catchup.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

namespace {

Error closed_error() {
  return Error(Errc::closed, "the connection went down while shipping");
}

}  // namespace

Status CatchUp::ship_checkpoint(Pass& p) {
  Shard& s = p.s;
  const auto& peer = options_.peers[p.l.follower];
  auto ck = wal::load_newest_checkpoint(wal_.dir(), nullptr);
  if (!ck) return std::move(ck).error();
  if (!ck->has_value())
    return Error(Errc::not_found,
                 fmt::format("{} holds no checkpoint (the store does not model SnapshottableStore "
                             "or no checkpoint trigger is set): restore the follower from a "
                             "snapshot, or raise retain_bytes",
                             wal_.dir()));
  wal::CheckpointReader& in = **ck;
  const uint64_t total = in.size();
  auto seqs = read_checkpoint_prefix(in, options_.shards);
  if (!seqs) return std::move(seqs).error();
  const uint64_t covers = (*seqs)[s.index];
  if (covers < p.acked)
    return Error(Errc::not_found,
                 fmt::format("the newest checkpoint {} covers shard {} only up to seq {}, and the "
                             "log before it is deleted: restore the follower from a snapshot, or "
                             "raise retain_bytes",
                             in.path(), s.index, covers));
  RDMAREPL_TRY(in.rewind());
  RDMAREPL_TRY(claim_link(p));
  // Authenticated, each chunk's tag follows it in the large-record buffer.
  const size_t tag = p.l.carriers->keyed ? kMacTagBytes : 0;
  const size_t room =
      std::min<size_t>(p.l.large.length > tag ? p.l.large.length - tag : 0, s.staging.size());
  if (room <= kChunkHeaderSize + 4096)
    return Error(Errc::invalid_argument, "the large-record buffer is too small for chunks");
  const size_t chunk = room - kChunkHeaderSize;
  log::info(
      "rdmarepl leader: follower {} shard {}: needs seq {}, which the log no longer holds; "
      "shipping checkpoint {} ({} bytes, covers shard {} up to seq {})",
      peer.to_string(), s.index, p.acked + 1, in.path(), total, s.index, covers);
  const uint64_t t0 = mono_ns();
  uint64_t offset = 0;
  uint32_t crc = 0;
  uint32_t replies = 0;
  do {
    const auto len = static_cast<uint32_t>(std::min<uint64_t>(chunk, total - offset));
    auto* payload = reinterpret_cast<uint8_t*>(s.staging.data() + kChunkHeaderSize);
    RDMAREPL_TRY(read_exact(in, std::span<uint8_t>(payload, len), "ended early"));
    ChunkHeader h;
    h.id = in.seq();
    h.total = total;
    h.offset = offset;
    h.length = len;
    crc = crc32c::extend(crc, payload, len);
    h.crc = crc;
    h.flags = offset + len == total ? kChunkLast : 0;
    encode_chunk_header(h,
                        std::span<std::byte, kChunkHeaderSize>(s.staging.data(), kChunkHeaderSize));
    if (!pace(kChunkHeaderSize + len)) return closed_error();
    RDMAREPL_TRY(post_chunk(p, kChunkHeaderSize + len, (h.flags & kChunkLast) != 0 ? covers : 0));
    ++replies;
    offset += len;
    // The reply: the staging buffer is free again and the follower wants the next chunk.
    RDMAREPL_TRY(await_reply(p, replies, offset, total, len, covers));
  } while (offset < total);
  const uint64_t ms = (mono_ns() - t0) / 1'000'000;
  log::info(
      "rdmarepl leader: follower {} shard {}: checkpoint {} installed ({} bytes in {} ms); "
      "streaming the log after it",
      peer.to_string(), s.index, in.path(), total, ms);
  return ok_status();
}

// Nothing else is in flight on a catching-up link once its last batch was acknowledged.
Status CatchUp::claim_link(Pass& p) {
  for (;;) {
    {
      std::lock_guard lock(p.s.mu);
      if (over(p.l, p.generation)) return closed_error();
      if (p.l.inflight_count == 0 && !p.l.large_busy) {
        p.l.shipping = true;
        p.l.ship_replies = 0;
        return ok_status();
      }
    }
    if (!sleep_for(std::chrono::microseconds(100))) return closed_error();
  }
}

Status CatchUp::post_chunk(Pass& p, uint64_t bytes, uint64_t covers) {
  std::lock_guard lock(p.s.mu);
  if (over(p.l, p.generation)) return closed_error();
  transport::WriteRequest wr;
  wr.wr_id = UINT64_MAX;
  wr.local_addr = p.s.staging.data();
  wr.length = static_cast<uint32_t>(bytes);
  wr.lkey = p.s.staging.lkey();
  wr.remote_addr = p.l.large.addr;
  wr.rkey = p.l.large.rkey;
  wr.imm = make_imm(ImmKind::checkpoint, p.s.index, 0);
  const auto st = p.l.post_raw(wr);
  if (st != transport::PostStatus::ok) {
    host_.link_down(p.s, p.l, "a checkpoint chunk could not be posted");
    return closed_error();
  }
  ChannelMetrics::add(metrics_.catchup_bytes, bytes);
  ChannelMetrics::add(p.l.catchup_bytes, bytes);
  // Once the last chunk is installed the follower acknowledges the checkpoint's seq.
  if (covers > p.l.sent_seq) p.l.sent_seq = covers;
  return ok_status();
}

Status CatchUp::await_reply(Pass& p, uint32_t replies, uint64_t offset, uint64_t total,
                            uint64_t len, uint64_t covers) {
  const auto& peer = options_.peers[p.l.follower];
  for (;;) {
    {
      std::lock_guard lock(p.s.mu);
      Link& l = p.l;
      if (l.ship_replies.load(std::memory_order_acquire) < replies && over(l, p.generation))
        return closed_error();
      if (l.ship_replies.load(std::memory_order_acquire) >= replies) {
        const auto reply = static_cast<ShipReply>(l.ship_reply.load());
        if (reply == ShipReply::no_restore)
          return Error(Errc::unsupported,
                       fmt::format("follower {} refused the checkpoint: its store does not "
                                   "model SnapshottableStore (snapshot/restore hooks); add "
                                   "them to the follower's store, or restore the follower "
                                   "from a snapshot",
                                   peer.to_string()));
        if (reply == ShipReply::failed)
          return Error(Errc::io_error, fmt::format("follower {} could not install the checkpoint "
                                                   "(see its log)",
                                                   peer.to_string()));
        const bool want =
            offset == total ? reply == ShipReply::installed : reply == ShipReply::chunk_ok;
        if (!want) {
          ChannelMetrics::add(metrics_.protocol_errors);
          return Error(Errc::protocol_error,
                       fmt::format("protocol error: follower {} replied {} to checkpoint chunk "
                                   "at offset {}",
                                   peer.to_string(), l.ship_reply.load(), offset - len));
        }
        if (offset == total) {
          l.shipping = false;
          // Counted before the acked seq moves: whoever sees the follower caught up sees
          // the shipment counted.
          ChannelMetrics::add(metrics_.checkpoints_shipped);
          if (covers > l.acked_seq.load(std::memory_order_relaxed))
            l.acked_seq.store(covers, std::memory_order_release);
          // The checkpoint replaced the follower's whole store: every shard resumes from its
          // seqs, in a new session (the follower applies nothing more of this one).
          l.carriers->fail("the follower installed a checkpoint; reconnecting from its seqs");
        }
        return ok_status();
      }
    }
    if (!sleep_for(std::chrono::microseconds(100))) return closed_error();
  }
}

}  // namespace rdmarepl::replication::detail
